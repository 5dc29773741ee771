package gitstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// gitRepo makes a repository in a temporary folder with one commit of
// a.txt and sub/b.txt on branch "trunk".
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required by this test (scripts/setup installs it): %v", err)
	}
	dir := t.TempDir()
	write(t, dir, "a.txt", "a\n")
	write(t, dir, "sub/b.txt", "b\n")
	for _, args := range [][]string{
		{"init", "-q", "-b", "trunk"},
		{"add", "."},
		{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "first commit"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// execGit runs git unconfined, with the environment Read gives it: the
// repositories of these tests are the tests' own. A missing binary is
// ErrNoGit, as the server's runner reports it.
func execGit(ctx context.Context, c Command) (Output, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return Output{}, fmt.Errorf("%w: %v", ErrNoGit, err)
	}
	cmd := exec.CommandContext(ctx, bin, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: ee.ExitCode()}, nil
	}
	return Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, err
}

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadRepositoryWithModifications(t *testing.T) {
	dir := gitRepo(t)
	write(t, dir, "a.txt", "changed by the user\n")
	write(t, dir, "new/c.txt", "untracked\n")
	st := Read(context.Background(), dir, execGit)
	if !st.Repo || st.Branch != "trunk" || len(st.Head) < 7 || st.Subject != "first commit" {
		t.Fatalf("Read = %+v; want repo on trunk at a commit \"first commit\"", st)
	}
	want := []Change{{Status: " M", Path: "a.txt"}, {Status: "??", Path: "new/"}}
	if !reflect.DeepEqual(st.Modified, want) {
		t.Errorf("Modified = %+v; want %+v", st.Modified, want)
	}
	for rel, dirty := range map[string]bool{"a.txt": true, "new/c.txt": true, "sub/b.txt": false, "b.txt": false} {
		if _, got := st.Dirty(rel); got != dirty {
			t.Errorf("Dirty(%q) = %v; want %v", rel, got, dirty)
		}
	}
}

func TestReadSubfolderUsesPrefix(t *testing.T) {
	dir := gitRepo(t)
	write(t, dir, "sub/b.txt", "changed\n")
	st := Read(context.Background(), filepath.Join(dir, "sub"), execGit)
	if !st.Repo || st.Prefix != "sub/" {
		t.Fatalf("Read(sub) = %+v; want prefix sub/", st)
	}
	if c, ok := st.Dirty("b.txt"); !ok || st.Rel(c) != "b.txt" {
		t.Errorf("Dirty(b.txt) in sub = %+v, %v; want the modification", c, ok)
	}
}

func TestReadDetachedAndEmptyRepository(t *testing.T) {
	dir := gitRepo(t)
	cmd := exec.Command("git", "checkout", "-q", "--detach")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("detach: %v %s", err, out)
	}
	if st := Read(context.Background(), dir, execGit); !st.Repo || st.Branch != "" || st.Head == "" || st.Describe()[:13] != "detached HEAD" {
		t.Errorf("detached: %+v %q", st, st.Describe())
	}

	empty := t.TempDir()
	cmd = exec.Command("git", "init", "-q", "-b", "main")
	cmd.Dir = empty
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	if st := Read(context.Background(), empty, execGit); !st.Repo || st.Branch != "main" || st.Head != "" || st.Describe() != "main, no commit yet" {
		t.Errorf("empty repository: %+v %q", st, st.Describe())
	}
}

func TestReadOutsideRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required by this test: %v", err)
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir)) // a repository above the temp folder must not count
	st := Read(context.Background(), dir, execGit)
	if st.Repo || st.Reason != ReasonNotRepo {
		t.Errorf("Read outside a repository = %+v; want Reason %q", st, ReasonNotRepo)
	}
}

func TestReadWithoutGitBinary(t *testing.T) {
	dir := gitRepo(t)
	t.Setenv("PATH", t.TempDir()) // an empty folder: no git
	st := Read(context.Background(), dir, execGit)
	if st.Repo || st.Reason != ReasonNoGit || st.Describe() != ReasonNoGit {
		t.Errorf("Read without git = %+v; want Reason %q", st, ReasonNoGit)
	}
}

func TestParsePorcelainRenamesAndCap(t *testing.T) {
	out := []byte("R  new.go\x00old.go\x00 M a b.go\x00?? d/\x00")
	cs, cut := parsePorcelain(out, 10)
	want := []Change{{Status: "R ", Path: "new.go", From: "old.go"}, {Status: " M", Path: "a b.go"}, {Status: "??", Path: "d/"}}
	if !reflect.DeepEqual(cs, want) || cut {
		t.Errorf("parsePorcelain = %+v, %v; want %+v", cs, cut, want)
	}
	if cs, cut := parsePorcelain(out, 2); len(cs) != 2 || !cut {
		t.Errorf("parsePorcelain capped at 2 = %+v, %v; want 2 and truncated", cs, cut)
	}
}

// A repository's config must not make a status run a program.
func TestReadIgnoresRepositoryFSMonitor(t *testing.T) {
	dir := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command("git", "config", "core.fsmonitor", "touch "+marker+" #")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("config: %v %s", err, out)
	}
	Read(context.Background(), dir, execGit)
	if _, err := os.Stat(marker); err == nil {
		t.Error("core.fsmonitor of the repository ran")
	}
}

// BenchmarkRead measures what a task's start and end pay for the git state
// of a small repository with one modified file.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	for i := 0; i < 50; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "files"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f1.txt"), []byte("changed\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st := Read(context.Background(), dir, execGit); !st.Repo || len(st.Modified) != 1 {
			b.Fatalf("Read = %+v", st)
		}
	}
}
