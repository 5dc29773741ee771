package tools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunStdinReachesTheProgram: a program started with a Stdin pipe reads
// what is written to it, through the sandbox supervisor, and ends at EOF;
// that is how a language server is spoken to.
func TestRunStdinReachesTheProgram(t *testing.T) {
	root := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), RunSpec{Argv: []string{"cat"}, Dir: root, Stdin: r, Stdout: &out,
			Timeout: 30 * time.Second, Sandbox: SandboxOptions{Roots: []string{root}, RootsReadOnly: true}})
		done <- err
	}()
	if _, err := w.WriteString("Content-Length: 2\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run(cat): %v", err)
	}
	if got := out.String(); got != "Content-Length: 2\r\n\r\n{}" {
		t.Errorf("cat echoed %q; want what was written to its stdin", got)
	}
}

// TestRunRootsReadOnly: with RootsReadOnly the program reads the workspace
// but cannot write it, while the temporary folder (a cache) stays writable.
func TestRunRootsReadOnly(t *testing.T) {
	landlockABI(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	res, err := Run(context.Background(), RunSpec{
		Argv: []string{"sh", "-c", "cat a.txt; echo x > b.txt; echo $? ; t=$(mktemp) && echo tmp-ok && rm -f $t"},
		Dir:  root, Stdout: &out, Stderr: &errb, Timeout: 30 * time.Second,
		Sandbox: SandboxOptions{Roots: []string{root}, RootsReadOnly: true},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Fields(out.String())
	if len(lines) != 3 || lines[0] != "hello" || lines[1] == "0" || lines[2] != "tmp-ok" {
		t.Errorf("output %q (stderr %q, %+v); want the file read, the write refused (non-zero), the temporary file made", out.String(), errb.String(), res)
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); err == nil {
		t.Errorf("b.txt was written in a read-only root")
	}
}

// TestRunInputAndExtraEnv: a one-shot program reads its Input whole on
// stdin, and ExtraEnv reaches it after the allowlist filtered the base
// (a variable of the base with the same shape does not).
func TestRunInputAndExtraEnv(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	_, err := Run(context.Background(), RunSpec{
		Argv: []string{"sh", "-c", `cat; echo; echo "extra=$HOOK_DIR base=${SOME_TOKEN-unset}"`},
		Dir:  root, Input: []byte(`{"hook_event_name":"Stop"}`), Stdout: &out, Timeout: 30 * time.Second,
		Env:      []string{"PATH=" + os.Getenv("PATH"), "SOME_TOKEN=secret"},
		ExtraEnv: []string{"HOOK_DIR=" + root},
		Sandbox:  SandboxOptions{Roots: []string{root}},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := `{"hook_event_name":"Stop"}` + "\nextra=" + root + " base=unset\n"
	if got := out.String(); got != want {
		t.Errorf("output %q; want %q", got, want)
	}
}
