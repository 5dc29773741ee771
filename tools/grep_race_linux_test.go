package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/internal/linkswap"
	"github.com/agentls/agentls/workspace"
)

// TestGrepToolSymlinkSwapNeverLeadsOutside: 1,000 grep tool calls while a
// goroutine keeps exchanging a folder and a file of the workspace with
// symlinks to an outside folder and file (renameat2 RENAME_EXCHANGE): no
// call prints a line from outside.
func TestGrepToolSymlinkSwapNeverLeadsOutside(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, text := range map[string]string{
		filepath.Join(root, "sub", "a.txt"):    "marker inside\n",
		filepath.Join(root, "f.txt"):           "marker inside\n",
		filepath.Join(outside, "a.txt"):        "marker OUTSIDE secret\n",
		filepath.Join(outside, "secret.txt"):   "marker OUTSIDE secret\n",
		filepath.Join(outside, "also.txt"):     "marker OUTSIDE secret\n",
		filepath.Join(root, "sub", "more.txt"): "nothing here\n",
	} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// Made after the workspace listed the tree, so the index holds the
	// real folder and file; the links only ever appear by exchange.
	if err := os.Symlink(outside, filepath.Join(root, "sublink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "flink")); err != nil {
		t.Fatal(err)
	}
	r := newReg(t, Env{Workspace: ws})

	stop := linkswap.Start(t, root, [][2]string{{"sub", "sublink"}, {"f.txt", "flink"}})
	leaks, inside := 0, 0
	for i := 0; i < 1000; i++ {
		args := map[string]any{"pattern": "marker", "literal": true}
		if i%2 == 1 {
			args["path"] = "sub"
		}
		res, err := r.Run(context.Background(), "grep", mustJSON(t, args))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Text, "OUTSIDE") {
			leaks++
		}
		inside += strings.Count(res.Text, "marker inside")
	}
	swaps := stop()
	t.Logf("1000 grep calls, %d swaps: %d lines from inside, %d calls with outside lines", swaps, inside, leaks)
	if leaks > 0 {
		t.Errorf("%d of 1000 grep calls printed lines from outside the workspace", leaks)
	}
	if swaps < 100 || inside == 0 {
		t.Errorf("the race did not happen: %d swaps, %d inside lines", swaps, inside)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
