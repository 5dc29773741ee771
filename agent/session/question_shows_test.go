package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// askAll allows every request and keeps what it was asked.
type askAll struct{ reqs []tools.ApprovalRequest }

func (a *askAll) Approve(_ context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	a.reqs = append(a.reqs, req)
	return tools.AllowOnce, nil
}

// TestTheQuestionShowsWhatRuns: run_command asks with the command text the
// user sees, as the faces render it (the host's redactor, as the task
// wires tools.Env.Shown); a command that text would show in part (a
// private key block, a key's shape, a configured secret's value around
// the payload) is refused before any question and never runs, while an
// ordinary command is asked with exactly its own text and runs.
func TestTheQuestionShowsWhatRuns(t *testing.T) {
	const configured = "hunter2-configured-value"
	shown := func(s string) string { return redact.New(configured).String(s) }
	pem := "-----BEGIN RSA PRIVATE KEY-----"
	end := "-----END RSA PRIVATE KEY-----"
	cases := []struct {
		name    string
		args    map[string]any
		refused bool
	}{
		{"PEM markers around the payload", map[string]any{"command": "echo '" + pem + "' >/dev/null; touch M; echo '" + end + "' >/dev/null"}, true},
		{"PEM begin marker alone before the payload", map[string]any{"command": "echo '" + pem + "\nQUJD' >/dev/null && touch M"}, true},
		{"a key-shaped word hiding the payload", map[string]any{"command": "X=sk-proj-abcDEF0123456789ghijKLMNop; touch M"}, true},
		{"a configured secret value in the line", map[string]any{"command": "echo " + configured + " >/dev/null; touch M"}, true},
		{"argv holding a PEM block", map[string]any{"argv": []string{"sh", "-c", "touch M", pem + "\nQUJD\n" + end}}, true},
		{"an ordinary command", map[string]any{"command": "touch M"}, false},
		{"an ordinary argv", map[string]any{"argv": []string{"touch", "M"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{dir}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ap := &askAll{}
			reg := tools.New(tools.Env{Workspace: ws, Approver: ap, Shown: shown})
			defer reg.Close()
			raw, _ := json.Marshal(c.args)
			res, err := reg.Run(context.Background(), "run_command", raw)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(filepath.Join(dir, "M"))
			ran := statErr == nil
			if c.refused {
				if ran || len(ap.reqs) != 0 || !res.IsError || !strings.Contains(res.Text, "cannot be shown whole") {
					t.Fatalf("ran %v, asked %d times (%+v), result %q: want refused before any question", ran, len(ap.reqs), ap.reqs, res.Text)
				}
				return
			}
			if !ran || len(ap.reqs) != 1 {
				t.Fatalf("ran %v, asked %d times, result %q: want asked once and run", ran, len(ap.reqs), res.Text)
			}
			if q := ap.reqs[0]; shown(q.Command) != q.Command || shown(q.Summary) != q.Summary || !strings.Contains(q.Summary, "touch") {
				t.Fatalf("the question %+v is not the command whole", q)
			}
		})
	}
}
