package langserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentls/agentls/internal/procmem"
)

var floodBuild struct {
	once sync.Once
	path string
	err  error
}

// floodServer builds testdata/floodls once per test binary, outside /tmp
// (the sandbox gives each program a private /tmp), and returns its path.
func floodServer(t testing.TB) string {
	t.Helper()
	floodBuild.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			floodBuild.err = err
			return
		}
		_ = os.MkdirAll(cache, 0o755)
		dir, err := os.MkdirTemp(cache, "agentls-floodls-")
		if err != nil {
			floodBuild.err = err
			return
		}
		floodBuild.path = filepath.Join(dir, "floodls")
		if out, err := exec.Command("go", "build", "-o", floodBuild.path, "./testdata/floodls").CombinedOutput(); err != nil {
			floodBuild.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if floodBuild.err != nil {
		t.Fatalf("building testdata/floodls: %v", floodBuild.err)
	}
	return floodBuild.path
}

// maxRSS is the most the test process may hold while a language server
// floods it (under the race detector, with its shadow memory, 5 times
// that).
var maxRSS int64 = map[bool]int64{false: 200 << 20, true: 1000 << 20}[raceEnabled]

// flood is the size of a flood: 10 times the limit (under the race
// detector 3 times, still over it: it reads every byte ~10 times slower).
var flood = map[bool]int{false: 10, true: 3}[raceEnabled] * MaxMessage

// TestLanguageServerFloodsAreBounded: a real language server process
// (testdata/floodls) sends one answer at 10 times the message limit, or
// a count of locations or a hover text far over what a tool keeps: the
// answer over the limit fails its call with an error that says so (the
// flood was read through, the connection stays in step: the next call is
// answered), the others are cut; the process's peak RSS stays under
// 200 MB throughout.
func TestLanguageServerFloodsAreBounded(t *testing.T) {
	bin := floodServer(t)
	for _, tc := range []struct {
		name  string
		args  []string
		tool  string
		check func(t *testing.T, text string, data *Answer)
	}{
		{"references at 10x the message limit (3x under -race)", []string{"-refbytes", fmt.Sprint(flood)}, "references", func(t *testing.T, text string, _ *Answer) {
			for _, w := range []string{"textDocument/references", fmt.Sprintf("exceeds the limit of %d bytes", MaxMessage), "read and discarded", "Use grep and read_file instead"} {
				if !strings.Contains(text, w) {
					t.Errorf("result lacks %q:\n%.500s", w, text)
				}
			}
		}},
		{"400,000 references", []string{"-refs", fmt.Sprint(map[bool]int{false: 400000, true: 100000}[raceEnabled])}, "references", func(t *testing.T, text string, _ *Answer) {
			if !strings.Contains(text, "exceeds the limit") {
				t.Errorf("result:\n%.500s", text)
			}
		}},
		{"30,000 references within the message limit", []string{"-refs", "30000"}, "references", func(t *testing.T, text string, a *Answer) {
			if a == nil || a.Total != 30000 || len(a.Refs) != MaxLocations {
				t.Fatalf("answer %+v; want %d refs kept of 30000:\n%.300s", a, MaxLocations, text)
			}
			if !strings.Contains(text, "30000 in 1 file(s)") || !strings.Contains(text, "and 29940 more not listed") || len(text) > 16<<10 {
				t.Errorf("result (%d bytes):\n%.800s", len(text), text)
			}
		}},
		{"hover at 10x the message limit (3x under -race)", []string{"-hover", fmt.Sprint(flood)}, "hover", func(t *testing.T, text string, _ *Answer) {
			if !strings.Contains(text, "textDocument/hover") || !strings.Contains(text, "exceeds the limit") {
				t.Errorf("result:\n%.500s", text)
			}
		}},
		{"hover of 6 MB within the message limit", []string{"-hover", fmt.Sprint(6 << 20)}, "hover", func(t *testing.T, text string, _ *Answer) {
			if len(text) > MaxHover+300 || !strings.Contains(text, "func Total(xs []int) int") || !strings.Contains(text, "bytes cut: the hover text was") {
				t.Errorf("result of %d bytes; want at most %d with the signature and a note:\n%.300s", len(text), MaxHover+300, text)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, dir := goWorkspace(t, "greet")
			ts := Tools(Env{Workspace: ws, Source: newPool(t, dir, map[string]Config{"go": {Command: bin, Args: tc.args}})})
			procmem.ResetPeak(t)
			start := time.Now()
			res := run(t, ts, tc.tool, map[string]any{"file": "order/summary.go", "symbol": "Total", "line": 6})
			took := time.Since(start)
			peak := procmem.Peak(t, procmem.Self)
			data, _ := res.Data.(*Answer)
			tc.check(t, res.Text, data)
			if peak > maxRSS {
				t.Errorf("peak RSS %d MB; want under %d MB", peak>>20, maxRSS>>20)
			}
			// The stream is in step after the flood: the next request is
			// answered (a definition: null, so "none").
			next := run(t, ts, "definition", map[string]any{"file": "order/summary.go", "symbol": "Total", "line": 6})
			if next.IsError || !strings.Contains(next.Text, "none") {
				t.Errorf("the call after the flood: %s", next.Text)
			}
			t.Logf("%s: answered in %s, peak RSS %d MB, %d bytes to the model", tc.name, took.Round(time.Millisecond), peak>>20, len(res.Text))
		})
	}
}
