package settings

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentls/agentls/agent/session"
)

func TestStoredLoginIsTheUsersOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agentls")
	if l, err := ReadLogin(dir); l.APIKey != "" || err != nil {
		t.Fatalf("no file: %q, %v; want none", l.APIKey, err)
	}
	if _, err := StoreLogin(dir, Login{APIKey: "two words"}); err == nil {
		t.Error("a key with a space was stored")
	}
	if _, err := StoreLogin(dir, Login{APIKey: "sk-x", BaseURL: "ftp://nope"}); err == nil {
		t.Error("a base URL that is not http(s) was stored")
	}
	path, err := StoreLogin(dir, Login{APIKey: "  sk-test-123\n"})
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
	if l, err := ReadLogin(dir); l.APIKey != "sk-test-123" || err != nil {
		t.Errorf("stored key %q, %v", l.APIKey, err)
	}
	env := map[string]string{"OTHER": "x"}
	getenv := withStoredKey(func(k string) string { return env[k] }, dir, func() string { return session.EnvAPIKey })
	if got := getenv(session.EnvAPIKey); got != "sk-test-123" {
		t.Errorf("empty variable: %q; want the stored key", got)
	}
	if _, err := StoreLogin(dir, Login{APIKey: "sk-test-456"}); err != nil {
		t.Fatal(err)
	}
	if got := getenv(session.EnvAPIKey); got != "sk-test-456" {
		t.Errorf("after a second login: %q; want the new key", got)
	}
	env[session.EnvAPIKey] = "from-env"
	if got := getenv(session.EnvAPIKey); got != "from-env" {
		t.Errorf("set variable: %q; want it to win", got)
	}
	if got := getenv("UNRELATED"); got != "" {
		t.Errorf("another variable got %q", got)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	delete(env, session.EnvAPIKey)
	if got := getenv(session.EnvAPIKey); got != "" {
		t.Errorf("a file others may read still gives its key %q", got)
	}
	if l, err := ReadLogin(dir); l.APIKey != "" || err == nil {
		t.Errorf("a world-readable file gave %q, %v; want it refused", l.APIKey, err)
	}
}

// TestForgetLoginRemovesTheStoredKey: after ForgetLogin the stored key is
// gone (ReadLogin finds nothing), and forgetting again is no error.
func TestForgetLoginRemovesTheStoredKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := StoreLogin(dir, Login{APIKey: "sk-stored-0001"}); err != nil {
		t.Fatal(err)
	}
	if err := ForgetLogin(dir); err != nil {
		t.Fatal(err)
	}
	if l, err := ReadLogin(dir); err != nil || l.APIKey != "" {
		t.Fatalf("after ForgetLogin: %+v, %v", l, err)
	}
	if err := ForgetLogin(dir); err != nil {
		t.Errorf("forgetting twice: %v", err)
	}
}
