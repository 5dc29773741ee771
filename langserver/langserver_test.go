package langserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/sandbox"
	"github.com/agentls/agentls/workspace"
)

func init() { sandbox.Main() }

// needGopls fails (never skips) without gopls on PATH: make install puts
// gopls v0.23.0 there.
func needGopls(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		t.Fatalf("gopls is not on PATH: run make install (go install golang.org/x/tools/gopls@v0.23.0): %v", err)
	}
}

// goWorkspace writes testdata/name.txtar into a temporary folder.
func goWorkspace(t testing.TB, name string) (*workspace.Workspace, string) {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range ar.Files {
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir
}

// fakeServer copies the fake language server testdata/script into dir,
// with the framing module it imports (testdata/lspframe.py) beside it, and
// returns the script's path. The servers run in the workspace: the sandbox
// shows a language server the roots, not this package's folder (hidden
// when it is under /tmp).
func fakeServer(t testing.TB, dir, script string) string {
	t.Helper()
	for _, name := range []string{script, "lspframe.py"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, script)
}

func newPool(t testing.TB, dir string, configs map[string]Config) *Pool {
	p := NewPool(0)
	p.Configure([]string{dir}, configs, "")
	t.Cleanup(func() { p.Close() })
	return p
}

func toolByName(ts []tools.Tool, name string) tools.Tool {
	for _, t := range ts {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func run(t *testing.T, ts []tools.Tool, name string, args any) tools.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := toolByName(ts, name).Run(ctx, b)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, b, err)
	}
	return res
}

// TestReferencesListCallersOnly: "who calls Total?" from one references
// call lists the four real uses, none of the comment or string mentions
// grep would find.
func TestReferencesListCallersOnly(t *testing.T) {
	needGopls(t)
	ws, dir := goWorkspace(t, "greet")
	ts := Tools(Env{Workspace: ws, Source: newPool(t, dir, nil)})
	res := run(t, ts, "references", map[string]any{"file": "order/summary.go", "symbol": "Total"})
	if res.IsError {
		t.Fatalf("references: %s", res.Text)
	}
	ans := res.Data.(*Answer)
	var got []string
	for _, r := range ans.Refs {
		got = append(got, r.Path+":"+itoa(r.Line))
	}
	want := []string{"order/summary.go:6", "order/summary.go:13", "order/total.go:13"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("references of Total = %v; want %v\n%s", got, want, res.Text)
	}
	if !strings.HasPrefix(res.Text, "references of Total (order/summary.go:6) via gopls: 3 in 2 file(s)") {
		t.Errorf("result starts %q; want the server and the counts", strings.SplitN(res.Text, "\n", 2)[0])
	}
	if strings.Contains(res.Text, "main.go") || strings.Contains(res.Text, "TotalTax is not") {
		t.Errorf("references list a comment or string mention:\n%s", res.Text)
	}
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonNum(n)) }

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRenameSymbolOneEditThatBuilds: rename_symbol renames Greet across
// packages in one Apply, leaves comments and strings alone, and the
// module still builds.
func TestRenameSymbolOneEditThatBuilds(t *testing.T) {
	needGopls(t)
	ws, dir := goWorkspace(t, "greet")
	rec := &recordingEditor{next: ws.DiskEditor()}
	ts := Tools(Env{Workspace: ws, Editor: rec, Source: newPool(t, dir, nil)})
	res := run(t, ts, "rename_symbol", map[string]any{"file": "main.go", "symbol": "Greet", "new_name": "Hello"})
	if res.IsError {
		t.Fatalf("rename_symbol: %s", res.Text)
	}
	if rec.calls != 1 {
		t.Errorf("the rename was applied in %d editor calls; want 1", rec.calls)
	}
	if strings.Join(res.Changed, " ") != "greet/greet.go main.go" {
		t.Errorf("changed %v; want greet/greet.go and main.go", res.Changed)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "greet/greet.go"))
	if !strings.Contains(string(b), "func Hello(name string)") || !strings.Contains(string(b), `"Greet: hello, "`) {
		t.Errorf("greet.go after the rename:\n%s", b)
	}
	m, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	if !strings.Contains(string(m), "greet.Hello(") {
		t.Errorf("main.go after the rename:\n%s", m)
	}
	cmd := exec.Command("go", "build", "./...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go build after the rename: %v\n%s", err, out)
	}
}

type recordingEditor struct {
	next  workspace.Editor
	calls int
}

func (r *recordingEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	r.calls++
	return r.next.Apply(ctx, label, edits)
}

// TestServerStartsLazilyAndStopsWhenIdle: no server runs before the first
// request; gopls runs after it and is stopped once idle.
func TestServerStartsLazilyAndStopsWhenIdle(t *testing.T) {
	needGopls(t)
	ws, dir := goWorkspace(t, "greet")
	p := NewPool(time.Second)
	p.Configure([]string{dir}, nil, "")
	defer p.Close()
	if r := p.Running(); len(r) != 0 {
		t.Fatalf("servers running before any request: %v", r)
	}
	ts := Tools(Env{Workspace: ws, Source: p})
	if res := run(t, ts, "hover", map[string]any{"file": "order/total.go", "symbol": "Total"}); res.IsError || !strings.Contains(res.Text, "func Total(prices []int) int") {
		t.Fatalf("hover: %s", res.Text)
	}
	if r := p.Running(); r["go"] != "gopls" {
		t.Fatalf("running after a request: %v; want gopls", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(p.Running()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("gopls still runs %s after its last request", 10*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEachToolAnswersFromGopls: every tool, addressed by name, answers
// from gopls with the server named; an ambiguous or absent name is a
// result the model can correct.
func TestEachToolAnswersFromGopls(t *testing.T) {
	needGopls(t)
	ws, dir := goWorkspace(t, "greet")
	ts := Tools(Env{Workspace: ws, Source: newPool(t, dir, nil)})
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"definition", map[string]any{"file": "main.go", "symbol": "Greet"}, false,
			[]string{"definition of Greet (main.go:11) via gopls: 1 in 1 file(s)", "greet/greet.go:4", "4: func Greet(name string) string {"}},
		{"callers", map[string]any{"file": "order/total.go", "symbol": "Total"}, false,
			[]string{"callers of Total (order/total.go:4) via gopls: 3 call(s) from 3 function(s) in 2 file(s)", "Summary: return fmt.Sprintf", "Average: return Total(prices)", "TotalTax: func TotalTax"}},
		{"symbols", map[string]any{"query": "Total"}, false, []string{"via gopls", "order/total.go:4 function order.Total", "order/total.go:13 function order.TotalTax"}},
		{"symbols", map[string]any{"query": "", "file": "order/summary.go"}, false, []string{"order/summary.go:5 function Summary", "order/summary.go:9 function Average"}},
		{"implementations", map[string]any{"file": "order/pricer.go", "symbol": "Pricer"}, false, []string{"implementations of Pricer (order/pricer.go:4) via gopls: 1 in 1 file(s)", "7: type Item struct{ Cents int }"}},
		{"hover", map[string]any{"file": "main.go", "symbol": "Nope"}, true, []string{"Nope does not occur in main.go"}},
		{"references", map[string]any{"file": "order/total.go", "symbol": "Total", "line": 2}, true, []string{"Total is not on line 2"}},
	} {
		res := run(t, ts, tc.tool, tc.args)
		if res.IsError != tc.isError {
			t.Errorf("%s(%v): isError %v: %s", tc.tool, tc.args, res.IsError, res.Text)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Text, w) {
				t.Errorf("%s(%v) lacks %q:\n%s", tc.tool, tc.args, w, res.Text)
			}
		}
	}
}
