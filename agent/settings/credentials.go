package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentls/agentls/workspace/ownfs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The API key a user stored with `agentls login`: a file of the user's
// agentls folder (credentials.json), mode 0600 in a folder of mode 0700,
// read when the environment variable of the key is empty. With
// `agentls login --base-url URL` the file holds the pair: the key and the
// model service it is for, which is then a user-level baseURL.

// CredentialsFileName is the name of the file in the user's agentls folder.
const CredentialsFileName = "credentials.json"

// Login is what `agentls login` stored.
type Login struct {
	APIKey  string `json:"apiKey"`
	BaseURL string `json:"baseURL,omitempty"`
}

// UserDir is the user's agentls folder: os.UserConfigDir()/agentls.
func UserDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("the user's configuration folder: %w", err)
	}
	return filepath.Join(dir, "agentls"), nil
}

// ReadLogin is what `agentls login` stored in dir, the zero Login when
// nothing was. A file other users may read is refused (its key is not
// used).
func ReadLogin(dir string) (Login, error) {
	path := filepath.Join(dir, CredentialsFileName)
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return Login{}, nil
	}
	if err != nil {
		return Login{}, fmt.Errorf("credentials: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return Login{}, fmt.Errorf("credentials %s: mode %v lets other users read the key; run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := ownfs.ReadOwnFile(path)
	if err != nil {
		return Login{}, fmt.Errorf("credentials: %w", err)
	}
	var c Login
	if err := json.Unmarshal(b, &c); err != nil {
		return Login{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	c.APIKey, c.BaseURL = strings.TrimSpace(c.APIKey), strings.TrimSpace(c.BaseURL)
	return c, nil
}

// StoreLogin writes l to dir's credentials file, readable by the user
// only, and returns the file's path.
func StoreLogin(dir string, l Login) (string, error) {
	l.APIKey, l.BaseURL = strings.TrimSpace(l.APIKey), strings.TrimSpace(l.BaseURL)
	if l.APIKey == "" || strings.ContainsAny(l.APIKey, " \t\r\n") {
		return "", errors.New("the API key must be one word, without spaces")
	}
	if l.BaseURL != "" {
		if err := checkURL(l.BaseURL); err != nil {
			return "", fmt.Errorf("--base-url %w", err)
		}
	}
	b, _ := json.Marshal(l)
	path := filepath.Join(dir, CredentialsFileName)
	if err := writePrivate(path, append(b, '\n')); err != nil {
		return "", fmt.Errorf("credentials: %w", err)
	}
	return path, nil
}

// writePrivate replaces path with b, mode 0600 from its creation, in a
// folder of mode 0700, by a rename inside agentls's folder (a reader never
// sees half a file), following no link.
func writePrivate(path string, b []byte) error {
	return ownfs.ReplaceFile(path, b, 0o600)
}

// withStoredKey wraps getenv: the variable keyEnv names, when empty, is
// the key `agentls login` stored in dir. The file is checked at each call
// (a login while agentls runs takes effect at the next task) but read
// again only when it changed: every redaction asks for the key.
func withStoredKey(getenv func(string) string, dir string, keyEnv func() string) func(string) string {
	var (
		mu   sync.Mutex
		seen os.FileInfo
		key  string
	)
	path := filepath.Join(dir, CredentialsFileName)
	return func(k string) string {
		v := getenv(k)
		if v != "" || k != keyEnv() {
			return v
		}
		st, err := os.Stat(path)
		if err != nil {
			return ""
		}
		mu.Lock()
		defer mu.Unlock()
		if seen != nil && os.SameFile(st, seen) && st.ModTime().Equal(seen.ModTime()) && st.Size() == seen.Size() && st.Mode() == seen.Mode() {
			return key
		}
		l, err := ReadLogin(dir)
		if err != nil {
			seen, key = nil, ""
			return ""
		}
		seen, key = st, l.APIKey
		return key
	}
}

// ForgetLogin removes what `agentls login` stored in dir (a link at the
// file's name is removed, never followed); nothing stored is no error.
func ForgetLogin(dir string) error {
	err := os.Remove(filepath.Join(dir, CredentialsFileName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("credentials: %w", err)
	}
	return nil
}
