package session

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStoredAPIKeyIsTheUsersOnly(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if k, err := StoredAPIKey(); k != "" || err != nil {
		t.Fatalf("no file: %q, %v; want none", k, err)
	}
	if _, err := StoreAPIKey("two words"); err == nil {
		t.Error("a key with a space was stored")
	}
	path, err := StoreAPIKey("  sk-test-123\n")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want 0600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm()&0o077 != 0 {
		t.Errorf("folder mode %v; want no access for others", dst.Mode().Perm())
	}
	if k, err := StoredAPIKey(); k != "sk-test-123" || err != nil {
		t.Errorf("stored key %q, %v", k, err)
	}
	env := map[string]string{"OTHER": "x"}
	getenv := WithStoredKey(func(k string) string { return env[k] }, func() string { return EnvAPIKey })
	if got := getenv(EnvAPIKey); got != "sk-test-123" {
		t.Errorf("empty variable: %q; want the stored key", got)
	}
	env[EnvAPIKey] = "from-env"
	if got := getenv(EnvAPIKey); got != "from-env" {
		t.Errorf("set variable: %q; want it to win", got)
	}
	if got := getenv("UNRELATED"); got != "" {
		t.Errorf("another variable got %q", got)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if k, err := StoredAPIKey(); k != "" || err == nil {
		t.Errorf("a world-readable file gave %q, %v; want it refused", k, err)
	}
}
