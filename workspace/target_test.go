package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRealTargetFollowsLinksWithinTheRoot(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, ".env"), []byte("K=v\n"), 0o600))
	must(os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	must(os.Symlink("../.env", filepath.Join(root, "docs", "setup.txt")))
	must(os.Symlink("docs", filepath.Join(root, "manual")))
	must(os.Symlink(".env", filepath.Join(root, "AGENTS.md")))
	outside := t.TempDir()
	must(os.Symlink(filepath.Join(outside, "credentials"), filepath.Join(root, "creds.txt")))
	realOutside, err := filepath.EvalSymlinks(outside)
	must(err)
	for _, tc := range []struct{ rel, want string }{
		{"docs/setup.txt", ".env"},
		{"manual/setup.txt", ".env"},
		{"AGENTS.md", ".env"},
		{".env", ".env"},
		{"main.go", "main.go"}, // missing: kept as written
		{"docs/missing.md", "docs/missing.md"},
		{"creds.txt", filepath.ToSlash(filepath.Join(realOutside, "credentials"))},
	} {
		if got := RealTarget(root, tc.rel); got != tc.want {
			t.Errorf("RealTarget(%q) = %q, want %q", tc.rel, got, tc.want)
		}
	}
}
