package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// TestSharedGrepFilterOutlivesTheTask: the filter build a task's first grep
// starts goes on after that task's registry is closed, and the next task's
// registry on the same index searches with it, finding what is there.
func TestSharedGrepFilterOutlivesTheTask(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 200; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("line of file %d\n", i)), 0o644)
	}
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	idx := grep.NewIndex(0)
	defer idx.Close()

	first := New(Env{Workspace: ws, Index: idx})
	call(t, first, "grep", map[string]any{"pattern": "nothing matches this", "literal": true})
	first.Close() // the task ends, maybe before the build does
	idx.Wait()
	if !idx.Warm() {
		t.Fatal("the shared filter is not warm after the first task ended")
	}
	if n, _ := idx.Stats(); n != 200 {
		t.Fatalf("the shared filter holds %d files; want 200", n)
	}
	second := newReg(t, Env{Workspace: ws, Index: idx})
	res := call(t, second, "grep", map[string]any{"pattern": "file 123", "literal": true})
	if !strings.Contains(res.Text, "f123.txt:1:") || idx.Building() {
		t.Errorf("second task's grep: %s (building %v)", res.Text, idx.Building())
	}
}
