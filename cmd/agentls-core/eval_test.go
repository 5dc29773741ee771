package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/eval"
)

// agentls eval --scripted runs tasks of the built-in suite, prints the
// table on stdout and progress on stderr, writes the JSON report, and
// --compare reads two reports back.
func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.json")
	var out, errb strings.Builder
	code := mainExit([]string{"eval", "--scripted", "--run", "^(go-question-units|py-fix-low-stock)$", "--out", report,
		"--settings", `{"prices": {"scripted": {"input": 1, "output": 2, "cached": 0.5}}}`},
		stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("agentls eval --scripted: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"go-question-units", "py-fix-low-stock", "model scripted: solved 2/2 (2 at their minimum calls)", "cost $0.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{"started", "[2/2]", "solved", "report written to " + report} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr (progress) lacks %q:\n%s", want, errb.String())
		}
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"cost": 0.0`) {
		t.Errorf("report lacks the cost of the tasks (prices setting):\n%s", b)
	}

	out.Reset()
	errb.Reset()
	if code := mainExit([]string{"eval", "--compare", report, report}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != 0 {
		t.Fatalf("agentls eval --compare: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "2 -> 2 (+0)") {
		t.Errorf("compare output lacks the totals:\n%s", out.String())
	}

	out.Reset()
	if code := mainExit([]string{"eval", "--list", "--run", "^py-"}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != 0 ||
		strings.Count(out.String(), "\n") != 8 || !strings.Contains(out.String(), "py-fix-low-stock") || strings.Contains(out.String(), "go-") {
		t.Errorf("agentls eval --list --run ^py-: exit %d, output:\n%s\nwant the 8 Python tasks", code, out.String())
	}

	// A real endpoint without a key is refused before anything runs.
	errb.Reset()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
	if code := mainExit([]string{"eval"}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != 2 || !strings.Contains(errb.String(), "no API key") {
		t.Errorf("agentls eval without a key: exit %d, stderr %q; want 2 and a message about the key", code, errb.String())
	}
}

// Without --scripted the suite runs against the endpoint the environment
// names, as agentls run does: here a scripted server started apart, which
// answers one task right and is asked nothing else.
func TestEvalConfiguredEndpoint(t *testing.T) {
	data, err := fs.ReadFile(eval.Builtin(), "tasks/go-question-units.txtar")
	if err != nil {
		t.Fatal(err)
	}
	script, err := fakemodel.ParseTxtar(data, "model.json")
	if err != nil {
		t.Fatal(err)
	}
	script.Turns = append(script.Turns, script.Turns...) // two runs of the task, one after the other
	srv, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL())
	t.Setenv("AGENTLS_MODEL", "my-model")
	var out, errb strings.Builder
	code := mainExit([]string{"eval", "--run", "^go-question-units$", "--repeat", "2"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("agentls eval: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "model my-model: solved 2/2") || !strings.Contains(out.String(), "go-question-units#2") {
		t.Errorf("table lacks the configured model's summary:\n%s", out.String())
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("the configured endpoint got %d requests; want 4 (2 runs of 2 calls)", n)
	}
}

// agentls eval --completion --scripted: the completion eval's table on
// stdout, a line per hole on stderr, the JSON report, exit 0 when the
// scores are those the script makes.
func TestEvalCompletionCommand(t *testing.T) {
	report := filepath.Join(t.TempDir(), "c.json")
	var out, errb strings.Builder
	code := mainExit([]string{"eval", "--completion", "--scripted", "--run", "^go/", "--out", report},
		stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "scripted-fim") || !strings.Contains(out.String(), "exact") {
		t.Errorf("stdout lacks the table:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "go/cart/cart.go:") || strings.Contains(errb.String(), "py/") {
		t.Errorf("stderr: want a line per go/ hole and no other:\n%s", errb.String())
	}
	b, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(b), `"prefix"`) {
		t.Errorf("report: %v\n%s", err, b)
	}
}
