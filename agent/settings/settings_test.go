package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/session"
)

// TestLoadLayers: the user's layers apply lowest first (defaults, the
// login pair, the environment, the user settings file), each value knows
// its layer, an invalid value keeps the one below and is reported under
// the name the user wrote it as, and the key is never a setting.
func TestLoadLayers(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		file      string
		login     *Login
		want      func(session.Settings) bool
		sources   map[string]Source
		problemOn string
	}{
		{name: "defaults", want: func(s session.Settings) bool {
			return s.Model == session.DefaultModel && s.BaseURL == session.DefaultBaseURL && s.Approval == "ask"
		}, sources: map[string]Source{"model": FromDefault, "baseURL": FromDefault}},
		{name: "environment", env: map[string]string{session.EnvModel: "llama3", session.EnvBaseURL: "http://127.0.0.1:11434/v1"},
			want:    func(s session.Settings) bool { return s.Model == "llama3" && s.BaseURL == "http://127.0.0.1:11434/v1" },
			sources: map[string]Source{"model": FromEnvironment, "baseURL": FromEnvironment}},
		{name: "a bad OPENAI_BASE_URL keeps the default", env: map[string]string{session.EnvBaseURL: "not a url"},
			want:    func(s session.Settings) bool { return s.BaseURL == session.DefaultBaseURL },
			sources: map[string]Source{"baseURL": FromDefault}, problemOn: session.EnvBaseURL},
		{name: "the login pair under the environment", login: &Login{APIKey: "sk-stored", BaseURL: "https://models.example/v1"},
			want:    func(s session.Settings) bool { return s.BaseURL == "https://models.example/v1" },
			sources: map[string]Source{"baseURL": FromLogin}},
		{name: "the environment over the login pair", login: &Login{APIKey: "sk-stored", BaseURL: "https://models.example/v1"},
			env:     map[string]string{session.EnvBaseURL: "https://other.example/v1"},
			want:    func(s session.Settings) bool { return s.BaseURL == "https://other.example/v1" },
			sources: map[string]Source{"baseURL": FromEnvironment}},
		{name: "the user file over the environment", env: map[string]string{session.EnvModel: "llama3"},
			file: `{"model": "gpt-4.1", "approval": "auto", "mcpServers": {"x": {"command": "true"}}}`,
			want: func(s session.Settings) bool {
				return s.Model == "gpt-4.1" && s.Approval == "auto" && len(s.MCPServers) == 1
			},
			sources: map[string]Source{"model": FromUserFile, "approval": FromUserFile, "mcpServers": FromUserFile}},
		{name: "a bad value in the user file", file: `{"maxTurns": -1, "apiKey": "sk-pasted"}`,
			want:    func(s session.Settings) bool { return s.MaxTurns == session.DefaultMaxTurns },
			sources: map[string]Source{"maxTurns": FromDefault}, problemOn: "maxTurns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "agentls")
			if tc.login != nil {
				if _, err := StoreLogin(dir, *tc.login); err != nil {
					t.Fatal(err)
				}
			}
			if tc.file != "" {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, UserSettingsFileName), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l := Load(Options{Getenv: func(k string) string { return tc.env[k] }, Dir: dir})
			if !tc.want(l.User.Settings) {
				t.Errorf("settings %+v", l.User.Settings)
			}
			for name, want := range tc.sources {
				if got := l.User.Source(name); got != want {
					t.Errorf("source of %s = %q; want %q", name, got, want)
				}
			}
			var problems []string
			for _, p := range l.Problems {
				problems = append(problems, p.String())
			}
			joined := strings.Join(problems, "; ")
			if (tc.problemOn == "") != (len(problems) == 0) || !strings.Contains(joined, tc.problemOn) {
				t.Errorf("problems %q; want one on %q", problems, tc.problemOn)
			}
			if strings.Contains(joined+fmt.Sprint(l.User.Settings), "sk-") {
				t.Errorf("a key shows in the settings or problems: %s", joined)
			}
			if tc.login != nil && l.Getenv(session.EnvAPIKey) != tc.login.APIKey {
				t.Errorf("the stored key is not the key variable's value")
			}
		})
	}
}

// TestClientLayer: the client's options come on top of the user's, marked
// as the client's; a bad one keeps the user's value.
func TestClientLayer(t *testing.T) {
	l := Load(Options{Getenv: func(string) string { return "" }, Dir: t.TempDir()})
	got, problems := Client(l.User, []byte(`{"agentls": {"baseURL": "http://127.0.0.1:1/v1", "maxTurns": "many", "approval": "auto"}}`))
	if got.Settings.BaseURL != "http://127.0.0.1:1/v1" || got.Settings.Approval != "auto" || got.Settings.MaxTurns != session.DefaultMaxTurns {
		t.Errorf("client layer: %+v", got.Settings)
	}
	if got.Source("baseURL") != FromClient || got.Source("approval") != FromClient || got.Source("maxTurns") != FromDefault {
		t.Errorf("sources %v", got.Sources())
	}
	if len(problems) != 1 || problems[0].Field != "maxTurns" {
		t.Errorf("problems %v", problems)
	}
	if l.User.Source("baseURL") != FromDefault {
		t.Error("the client layer changed the user's layers")
	}
}

// TestEndpointsRemembered: a confirmed endpoint is remembered in the
// user's folder (mode 0600) and only that one; a file others may write is
// not trusted.
func TestEndpointsRemembered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agentls")
	e := &Endpoints{dir: dir}
	if e.Confirmed("http://a:1|K") {
		t.Fatal("confirmed before any yes")
	}
	if err := e.Confirm("http://a:1|K"); err != nil {
		t.Fatal(err)
	}
	e2 := &Endpoints{dir: dir}
	if !e2.Confirmed("http://a:1|K") || e2.Confirmed("http://a:2|K") || e2.Confirmed("http://a:1|OTHER") {
		t.Error("the memory is not bound to the endpoint")
	}
	st, err := os.Stat(e.Path())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("endpoints file: %v %v", st, err)
	}
	if err := os.Chmod(e.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	if e2.Confirmed("http://a:1|K") {
		t.Error("a file others may write is trusted")
	}
	if (&Endpoints{}).Confirm("x") == nil {
		t.Error("no folder: Confirm says it remembered")
	}
}
