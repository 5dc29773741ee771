package eval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/eval"
)

func TestHolesAreCutAtTokenBoundaries(t *testing.T) {
	files := map[string][]byte{
		"a.go":     []byte("package a\n\n// a comment line that is long\nfunc f() {\n\tx := compute(1, 2)\n\ty := compute(3, 4)\n\tz := strings.Repeat(\"ab\", 3)\n\tif x > y && y > z {\n\t\treturn\n\t}\n\tw := total(x, y, z) + 1\n}\n"),
		"notes.md": []byte("not a source file, never cut, however long its lines are\n"),
	}
	holes := eval.Holes("fx", files)
	if len(holes) != 1 {
		t.Fatalf("holes = %+v; want one (every fifth line of code)", holes)
	}
	h := holes[0]
	if h.File != "a.go" || h.Line != 10 || h.Want != "x, y, z) + 1" || h.Name() != "fx/a.go:11" {
		t.Errorf("hole = %+v; want a.go line 11 cut after \"total(\"", h)
	}
}

// The scripted eval scores exactly what its script makes: the harness
// cuts, asks through the real model client over HTTP, shapes and scores.
func TestCompletionEvalScripted(t *testing.T) {
	rep, err := eval.RunCompletion(context.Background(), eval.CompletionOptions{
		Suite: eval.Builtin(), Settings: session.Defaults(), Scripted: true,
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Holes < 20 || rep.Failed != 0 {
		t.Fatalf("holes %d failed %d; want at least 20 holes, none failed", rep.Holes, rep.Failed)
	}
	if rep.Exact != rep.WantExact || rep.Prefix != rep.WantPrefix || rep.Exact == rep.Prefix {
		t.Errorf("exact %d prefix %d; the script makes exact %d prefix %d (and some prefix matches that are not exact)",
			rep.Exact, rep.Prefix, rep.WantExact, rep.WantPrefix)
	}
	if rep.SentAvg <= 0 {
		t.Errorf("sent bytes per hole = %v; want the request bodies counted", rep.SentAvg)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil || !strings.Contains(b.String(), "scripted-fim") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
