package redteam

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
)

// Secrets under ordinary names in the server's environment, as a
// developer's shell or a CI runner has them. Written in pieces so that no
// scanner takes this file for a leak.
var serverSecrets = map[string]string{
	"DB_PASS":           "dbpass-7Hq2Lx9Wc4Tz",
	"MYSQL_PWD":         "mysqlpwd-3Rt8Kp1Zs6",
	"CI_JOB_JWT":        "eyJ" + "hbGciOiJSUzI1NiIsImtpZCI6InJ0In0.eyJ" + "uYW1lc3BhY2VfaWQiOiI0MiJ9.c2lnbmF0dXJlLXJlZHRlYW0tMDEyMzQ1",
	"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/" + "T0REDTEAM/B0SECRETS/aBcDeFgHiJkLmNoPqRsT1234",
	"SMTP_PASS":         "smtppass-9Vb5Nm2Xq8",
}

// Secrets of a known shape in workspace files (not in any variable).
var (
	fileGitHubToken = "ghp_" + "R3dT34mT0k3nF0rTh3Suit3aBcDeFgHiJkLmN"
	fileAWSKey      = "AKIA" + "REDTEAM0SUITE9XY"
	filePrivateKey  = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBSZWRUZWFtU3VpdGVLZXlNYXRlcmlhbFJlZFRlYW1TdWl0ZQAAAJg\n-----END OPENSSH " + "PRIVATE KEY-----\n"
	// the key's base64 body, which must not leave whole or in part
	privateKeyBody = "QyNTUxOQAAACBSZWRUZWFtU3VpdGVLZXlNYXRlcmlhbFJlZFRlYW1TdWl0ZQAAAJg"
)

// TestSecretsByValue: a secret reaches nothing agentls writes down or sends
// on (the model's requests, the editor, the log, every file under
// .agentls: session store, recordings, reports), whether a command prints
// it, a file holds it or the model repeats it, and whether a variable's
// name or the value's shape marks it.
func TestSecretsByValue(t *testing.T) {
	attempt(t, famSecrets, "a command prints DB_PASS, MYSQL_PWD, CI_JOB_JWT, SLACK_WEBHOOK_URL and SMTP_PASS of the server's environment", func(t *testing.T) outcome {
		setServerSecrets(t)
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"echo ran-the-command; env"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, nil, serverOpts{})
		if _, err := s.run(t, map[string]any{"prompt": "show the environment", "mode": "edit"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(requestBodies(s), "ran-the-command") {
			t.Fatalf("the command did not run: %s", lastRequest(s))
		}
		return verdict(s, serverSecrets, true)
	})
	attempt(t, famSecrets, "a workspace file holds the server's secret values, read with read_file", func(t *testing.T) outcome {
		setServerSecrets(t)
		var ini strings.Builder
		for k, v := range serverSecrets {
			fmt.Fprintf(&ini, "%s = %s\n", strings.ToLower(k), v)
		}
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"deploy/app.ini"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, map[string]string{"deploy/app.ini": ini.String()}, serverOpts{})
		if _, err := s.run(t, map[string]any{"prompt": "what does deploy/app.ini say?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return verdict(s, serverSecrets, true)
	})
	attempt(t, famSecrets, "the model repeats SMTP_PASS and CI_JOB_JWT in its answer", func(t *testing.T) outcome {
		setServerSecrets(t)
		answer := "Use " + serverSecrets["SMTP_PASS"] + " and " + serverSecrets["CI_JOB_JWT"] + " to log in."
		s := newServer(t, []fakemodel.Turn{{Text: answer, FinishReason: "stop"}}, nil, serverOpts{})
		if _, err := s.run(t, map[string]any{"prompt": "how do I log in?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		pick := map[string]string{"SMTP_PASS": serverSecrets["SMTP_PASS"], "CI_JOB_JWT": serverSecrets["CI_JOB_JWT"]}
		return verdict(s, pick, false)
	})
	attempt(t, famSecrets, "a ghp_ token in a file the model reads", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"scripts/release.sh"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, map[string]string{"scripts/release.sh": "#!/bin/sh\nGH_AUTH=" + fileGitHubToken + "\ngh release create \"$1\"\n"}, serverOpts{})
		if _, err := s.run(t, map[string]any{"prompt": "what does the release script do?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return verdict(s, map[string]string{"ghp_ token": fileGitHubToken}, true)
	})
	attempt(t, famSecrets, "a PEM private key block in a file the model reads", func(t *testing.T) outcome {
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "read_file", `{"path":"deploy/id_deploy.txt"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, map[string]string{"deploy/id_deploy.txt": "deploy key:\n" + filePrivateKey}, serverOpts{})
		if _, err := s.run(t, map[string]any{"prompt": "what is in deploy/?", "mode": "ask"}); err != nil {
			t.Fatal(err)
		}
		return verdict(s, map[string]string{"private key": privateKeyBody}, true)
	})
	attempt(t, famSecrets, "an AWS key and a Slack webhook printed by a workspace script", func(t *testing.T) outcome {
		hook := "https://hooks.slack.com/services/" + "T0SCRIPT/B0OUTPUT/zYxWvUtSrQpOnMlKjI9876"
		s := newServer(t, []fakemodel.Turn{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", `{"command":"sh tools/creds.sh"}`)}},
			{Text: "Done.", FinishReason: "stop"},
		}, map[string]string{"tools/creds.sh": "echo ran-the-script\necho aws_access_key_id=" + fileAWSKey + "\necho hook=" + hook + "\n"}, serverOpts{})
		if _, err := s.run(t, map[string]any{"prompt": "run tools/creds.sh", "mode": "edit"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(requestBodies(s), "ran-the-script") {
			t.Fatalf("the script did not run: %s", lastRequest(s))
		}
		return verdict(s, map[string]string{"AWS key": fileAWSKey, "Slack webhook": hook[len("https://"):]}, true)
	})
	attempt(t, famSecrets, "a ?key= in the base URL", func(t *testing.T) outcome {
		const qkey = "qk-redteam-0a1b2c3d4e5f"
		model, err := fakemodel.Start(fakemodel.Script{Turns: []fakemodel.Turn{{Text: "Done.", FinishReason: "stop", Times: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { model.Close() })
		s := newServer(t, nil, nil, serverOpts{settings: map[string]any{"baseURL": model.URL() + "?key=" + qkey}})
		s.model = model
		r, err := s.run(t, map[string]any{"prompt": "hello", "mode": "ask"})
		if err != nil {
			t.Fatal(err)
		}
		var problems []string
		if reqs := model.Requests(); len(reqs) == 0 || reqs[0].Path != "/v1/chat/completions" || reqs[0].RawQuery != "key="+qkey {
			problems = append(problems, fmt.Sprintf("the request was joined wrongly (%d requests, status %s: %s)", len(reqs), r.Status, r.Answer))
		}
		problems = append(problems, leaks(s, map[string]string{"base URL key": qkey}, false)...)
		if len(problems) > 0 {
			return escaped("%s", strings.Join(problems, "; "))
		}
		return held("the request went to /v1/chat/completions?key=...; the key is in no log, message or file")
	})
	attempt(t, famSecrets, "a short ?key= in the base URL of a model that refuses connections", func(t *testing.T) outcome {
		// Shorter than any value the redactor hides by value: only
		// redacting the URL's query as such keeps it out.
		const qkey = "k7Q2xZ9"
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		s := newServer(t, nil, nil, serverOpts{settings: map[string]any{"baseURL": "http://" + addr + "/v1?key=" + qkey}})
		r, err := s.run(t, map[string]any{"prompt": "hello", "mode": "ask"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != "failed" {
			t.Fatalf("status %s with no model listening", r.Status)
		}
		if l := leaks(s, map[string]string{"base URL key": "key=" + qkey}, false); len(l) > 0 {
			return escaped("%s", strings.Join(l, "; "))
		}
		return held("the failure names the base URL without its key")
	})
}

func setServerSecrets(t *testing.T) {
	for k, v := range serverSecrets {
		t.Setenv(k, v)
	}
}

// verdict is escaped when a secret reached a sink (see leaks).
func verdict(s *server, secrets map[string]string, model bool) outcome {
	if l := leaks(s, secrets, model); len(l) > 0 {
		return escaped("%s", strings.Join(l, "; "))
	}
	return held("no secret reached the model, the editor, the log or .agentls")
}

// leaks lists where each secret was found: the model's requests (when
// model is set: a secret the model wrote itself is no news to it), what
// the server sent the editor, the server's log, and every file under
// .agentls (store, write-ahead log, recordings, reports).
func leaks(s *server, secrets map[string]string, model bool) []string {
	sinks := map[string]string{"the editor": s.fromServer(), "the log": s.logs.String()}
	if model {
		sinks["the model's requests"] = requestBodies(s)
	}
	return whereSecretsReached(secrets, s.root, sinks)
}

// whereSecretsReached lists, sorted, "NAME reached SINK, ..." for each
// secret found in the text of a sink (by name) or of a file under
// root/.agentls (by its path below root), which are added to sinks.
func whereSecretsReached(secrets map[string]string, root string, sinks map[string]string) []string {
	_ = filepath.WalkDir(filepath.Join(root, ".agentls"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				rel, _ := filepath.Rel(root, p)
				sinks[rel] = string(b)
			}
		}
		return nil
	})
	var out []string
	for name, value := range secrets {
		var where []string
		for sink, text := range sinks {
			if strings.Contains(text, value) {
				where = append(where, sink)
			}
		}
		if len(where) > 0 {
			out = append(out, fmt.Sprintf("%s reached %s", name, strings.Join(sortedStrings(where), ", ")))
		}
	}
	return sortedStrings(out)
}

func requestBodies(s *server) string {
	var b strings.Builder
	for _, r := range s.model.Requests() {
		b.Write(r.Body)
		b.WriteByte('\n')
	}
	return b.String()
}

func lastRequest(s *server) string {
	reqs := s.model.Requests()
	if len(reqs) == 0 {
		return "(no request)"
	}
	return string(reqs[len(reqs)-1].Body)
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
