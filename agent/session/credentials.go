package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentls/agentls/workspace/ownfs"
)

// The API key a user stored with `agentls login`: a file of the user's
// configuration folder (os.UserConfigDir()/agentls/credentials.json), mode
// 0600 in a folder of mode 0700, read when the environment variable of the
// key is empty. Settings never hold the key; the getenv of the host does.

// CredentialsFileName is the name of the file in the user's agentls folder.
const CredentialsFileName = "credentials.json"

type credentials struct {
	APIKey string `json:"apiKey"`
}

// CredentialsFile is where `agentls login` stores the key.
func CredentialsFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("credentials: %w", err)
	}
	return filepath.Join(dir, "agentls", CredentialsFileName), nil
}

// StoredAPIKey is the key `agentls login` stored, "" when there is none.
// A file other users may read is refused (its key is not used).
func StoredAPIKey() (string, error) {
	path, err := CredentialsFile()
	if err != nil {
		return "", err
	}
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("credentials: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("credentials %s: mode %v lets other users read the key; run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := ownfs.ReadOwnFile(path)
	if err != nil {
		return "", fmt.Errorf("credentials: %w", err)
	}
	var c credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("credentials %s: %w", path, err)
	}
	return strings.TrimSpace(c.APIKey), nil
}

// StoreAPIKey writes key to the credentials file, readable by the user
// only.
func StoreAPIKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return "", errors.New("the API key must be one word, without spaces")
	}
	path, err := CredentialsFile()
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(credentials{APIKey: key})
	// Mode 0600 from its creation, replaced by a rename in agentls's
	// folder, no link followed.
	if err := ownfs.ReplaceFile(path, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("credentials: %w", err)
	}
	return path, nil
}

// WithStoredKey wraps getenv: the variable keyEnv, when empty, is the key
// `agentls login` stored (read at each call, so a login while agentls runs
// takes effect at the next task).
func WithStoredKey(getenv func(string) string, keyEnv func() string) func(string) string {
	return func(k string) string {
		v := getenv(k)
		if v != "" || k != keyEnv() {
			return v
		}
		key, err := StoredAPIKey()
		if err != nil {
			return ""
		}
		return key
	}
}

// UserSettingsFileName is the user's own settings file in the agentls
// configuration folder: faces without an editor settings channel (ACP,
// the command line) apply it over the environment. The user writes it, so
// it may widen what the agent may do.
const UserSettingsFileName = "settings.json"

// UserSettings applies the user's settings file (os.UserConfigDir()/agentls/
// settings.json), when there is one, to c.
func UserSettings(c Settings) (Settings, []Problem) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return c, nil
	}
	path := filepath.Join(dir, "agentls", UserSettingsFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, []Problem{{Field: path, Message: err.Error()}}
	}
	return c.Apply(b)
}
