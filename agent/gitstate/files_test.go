package gitstate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestReadFilesAgreesWithGit: without running a program, ReadFiles finds
// the branch, HEAD and prefix git finds, in every shape of repository a
// workspace can be.
func TestReadFilesAgreesWithGit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, repo string) string // returns the folder to read
	}{
		{"top folder", func(t *testing.T, repo string) string { return repo }},
		{"subfolder", func(t *testing.T, repo string) string { return filepath.Join(repo, "sub") }},
		{"branch with a slash", func(t *testing.T, repo string) string {
			gitIn(t, repo, "checkout", "-q", "-b", "feature/x")
			return repo
		}},
		{"detached HEAD", func(t *testing.T, repo string) string {
			gitIn(t, repo, "checkout", "-q", "--detach")
			return repo
		}},
		{"packed refs", func(t *testing.T, repo string) string {
			gitIn(t, repo, "pack-refs", "--all")
			if _, err := os.Stat(filepath.Join(repo, ".git", "refs", "heads", "trunk")); err == nil {
				t.Fatal("pack-refs left the loose ref")
			}
			return repo
		}},
		{"linked work tree (a .git file with gitdir, and commondir)", func(t *testing.T, repo string) string {
			wt := filepath.Join(t.TempDir(), "wt")
			gitIn(t, repo, "worktree", "add", "-q", "-b", "side", wt)
			return wt
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, gitRepo(t))
			want := Read(context.Background(), dir, execGit)
			got := ReadFiles(dir)
			if !want.Repo || !got.Repo || got.Branch != want.Branch || got.Head != want.Head[:min(7, len(want.Head))] || got.Prefix != want.Prefix {
				t.Errorf("ReadFiles(%s) = %+v; git says %+v", dir, got, want)
			}
			if got.NoStatus != NoStatusNoSandbox || got.Modified != nil {
				t.Errorf("ReadFiles: NoStatus %q, Modified %v; want it to say the status was not read", got.NoStatus, got.Modified)
			}
		})
	}
}

func TestReadFilesEmptyRepositoryAndOutside(t *testing.T) {
	empty := t.TempDir()
	gitIn(t, empty, "init", "-q", "-b", "main")
	if st := ReadFiles(empty); !st.Repo || st.Branch != "main" || st.Head != "" || st.Describe() != "main, no commit yet" {
		t.Errorf("ReadFiles(empty repository) = %+v %q", st, st.Describe())
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	if st := ReadFiles(dir); st.Repo || st.Reason != ReasonNotRepo {
		t.Errorf("ReadFiles outside a repository = %+v; want %q", st, ReasonNotRepo)
	}
	if st := ReadFiles(filepath.Join(empty, ".git")); st.Repo {
		t.Errorf("ReadFiles inside .git = %+v; want no work tree", st)
	}
}

// TestReadWithoutConfinementRunsNothingElse: a Runner that cannot confine
// git makes Read fall back to the files, after one refused try.
func TestReadWithoutConfinementRunsNothingElse(t *testing.T) {
	dir := gitRepo(t)
	calls := 0
	refuse := func(ctx context.Context, c Command) (Output, error) {
		calls++
		return Output{}, ErrNoSandbox
	}
	st := Read(context.Background(), dir, refuse)
	if calls != 1 || !st.Repo || st.Branch != "trunk" || st.NoStatus != NoStatusNoSandbox {
		t.Errorf("Read with a refusing runner = %+v after %d calls; want the files' state after 1", st, calls)
	}
	if st := Read(context.Background(), dir, nil); !st.Repo || st.Branch != "trunk" || st.NoStatus == "" {
		t.Errorf("Read without a runner = %+v; want the files' state", st)
	}
}

// TestEnvIsBuiltFromScratch: nothing of this process's environment (a key)
// reaches git, and every run carries the neutral settings first.
func TestEnvIsBuiltFromScratch(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-not-for-git")
	if joined := strings.Join(Env(""), "\n"); strings.Contains(joined, "sk-not-for-git") || strings.Contains(joined, "OPENAI") {
		t.Errorf("Env() carries the server's key:\n%s", joined)
	}
	args := Args("status")
	if len(args) != 2*len(configNeutral)+1 || args[0] != "-c" || args[1] != "core.fsmonitor=false" || args[len(args)-1] != "status" {
		t.Errorf("Args(status) = %q", args)
	}
}

// TestReadFallsBackToFilesWhenGitFails: when git fails (a repository of
// another user, a broken index), the branch and HEAD still come from the
// files, and the state says why the uncommitted files are missing.
func TestReadFallsBackToFilesWhenGitFails(t *testing.T) {
	dir := gitRepo(t)
	failing := func(ctx context.Context, c Command) (Output, error) {
		return Output{ExitCode: 128, Stderr: []byte("fatal: detected dubious ownership in repository")}, nil
	}
	st := Read(context.Background(), dir, failing)
	if !st.Repo || st.Branch != "trunk" || !strings.Contains(st.NoStatus, "dubious ownership") {
		t.Errorf("Read with a failing git = %+v; want the files' state and git's error", st)
	}
	outside := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(outside))
	if st := Read(context.Background(), outside, failing); st.Repo || !strings.Contains(st.Reason, "dubious ownership") {
		t.Errorf("Read outside a repository with a failing git = %+v; want git's error", st)
	}
}
