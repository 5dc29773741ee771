package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	sess "github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

func TestConfigApply(t *testing.T) {
	def := sess.Defaults()
	for _, tc := range []struct {
		name     string
		raw      string
		want     func(c *sess.Settings)
		problems []string // fields with problems
	}{
		{"null", `null`, nil, nil},
		{"empty", `{}`, nil, nil},
		{"all fields", `{"model":"m1","baseURL":"http://127.0.0.1:8080/v1","apiKeyEnv":"MY_KEY","logLevel":"debug","approval":"auto","allowCommands":["go test"],"checkCommand":"go vet ./...","validate":"on","maxTurns":12,"showReport":true}`,
			func(c *sess.Settings) {
				c.Model, c.BaseURL, c.APIKeyEnv, c.LogLevel, c.Approval = "m1", "http://127.0.0.1:8080/v1", "MY_KEY", "debug", "auto"
				c.AllowCommands, c.CheckCommand, c.Validate, c.MaxTurns, c.ShowReport = []string{"go test"}, "go vet ./...", "on", 12, true
			}, nil},
		{"wrapped in section", `{"agentls":{"model":"m2"}}`, func(c *sess.Settings) { c.Model = "m2" }, nil},
		{"bad approval keeps default", `{"approval":"sometimes","model":"m3"}`, func(c *sess.Settings) { c.Model = "m3" }, []string{"approval"}},
		{"bad maxTurns", `{"maxTurns":0}`, nil, []string{"maxTurns"}},
		{"maxTurns wrong type", `{"maxTurns":"ten"}`, nil, []string{"maxTurns"}},
		{"bad baseURL", `{"baseURL":"ftp://x"}`, nil, []string{"baseURL"}},
		{"bad apiKeyEnv", `{"apiKeyEnv":"not a name"}`, nil, []string{"apiKeyEnv"}},
		{"bad validate and logLevel", `{"validate":"always","logLevel":"loud"}`, nil, []string{"logLevel", "validate"}},
		{"empty allowCommands entry", `{"allowCommands":["go test",""]}`, nil, []string{"allowCommands"}},
		{"showReport wrong type", `{"showReport":"yes"}`, nil, []string{"showReport"}},
		{"unknown setting", `{"modle":"x"}`, nil, []string{"modle"}},
		{"api key refused", `{"apiKey":"sk-secret-123"}`, nil, []string{"apiKey"}},
		{"not an object", `[1,2]`, nil, []string{"agentls"}},
		{"null field ignored", `{"model":null}`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := def
			if tc.want != nil {
				tc.want(&want)
			}
			got, problems := def.Apply([]byte(tc.raw))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Apply(%s) = %+v; want %+v", tc.raw, got, want)
			}
			var fields []string
			for _, p := range problems {
				fields = append(fields, p.Field)
				if strings.Contains(p.String(), "sk-secret") {
					t.Errorf("problem %q echoes the secret", p)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tc.problems, ",") {
				t.Errorf("problems = %v; want fields %v", problems, tc.problems)
			}
		})
	}
}

// withSettings is an initialized session with the agent service plugged in
// (it owns the settings) and an empty environment.
func withSettings(t *testing.T, cfg lsptest.Config, opts ...server.Option) (*session, *lsp.Service) {
	t.Helper()
	svc := lsp.NewService(lsp.ServiceOptions{Getenv: func(string) string { return "" }, UserDir: t.TempDir()})
	return initialized(t, cfg, append(svc.Options(), opts...)...), svc
}

// TestConfigOverLSP: initializationOptions and didChangeConfiguration apply;
// invalid values are reported with a showMessage warning naming the field;
// an API key sent as a setting is never echoed or logged.
func TestConfigOverLSP(t *testing.T) {
	secret := "sk-never-echo-this"
	var seen []string
	s, svc := withSettings(t, lsptest.Config{InitializationOptions: map[string]any{"model": "init-model", "maxTurns": -3, "apiKey": secret}},
		server.WithSettingsHandler(func(_ context.Context, _ server.SettingsFrom, raw json.RawMessage) { seen = append(seen, string(raw)) }))
	st := s.c.Await(2*time.Second, "a warning about maxTurns", func(st *lsptest.State) bool { return st.HasShowMessage("maxTurns") })
	for _, m := range st.ShowMessages {
		if strings.Contains(m.Message, "maxTurns") && m.Type != protocol.MessageTypeWarning {
			t.Errorf("config warning type = %v; want Warning", m.Type)
		}
	}
	if c := svc.Host().Settings(); c.Model != "init-model" || c.MaxTurns != sess.DefaultMaxTurns {
		t.Errorf("config after initialize = %+v; want model set and maxTurns default kept", c)
	}
	err := s.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeConfiguration, &protocol.DidChangeConfigurationParams{
		Settings: protocol.LSPAny(`{"agentls":{"approval":"deny","validate":"nope","logLevel":"debug"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.c.Await(2*time.Second, "a warning about validate", func(st *lsptest.State) bool { return st.HasShowMessage("validate") })
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
		t.Fatal(err)
	}
	if c := svc.Host().Settings(); c.Approval != "deny" || c.Validate != "edits" || c.Model != "init-model" {
		t.Errorf("config after change = %+v", c)
	}
	if len(seen) != 2 {
		t.Errorf("settings handler called %d times; want 2", len(seen))
	}
	if strings.Contains(s.c.Transcript(), secret) {
		// The client sent it; only the client's own message may hold it.
		lines := strings.Split(s.c.Transcript(), "\n")
		for _, l := range lines {
			if strings.Contains(l, secret) && !strings.Contains(l, " -> ") {
				t.Errorf("server echoed the API key: %s", l)
			}
		}
	}
}

// TestLogMirroring: logs reach the client as window/logMessage at the
// configured level only.
func TestLogMirroring(t *testing.T) {
	s, _ := withSettings(t, lsptest.Config{})
	name := t.TempDir() + "/x.txt"
	if err := s.c.OpenDocument(ctx(t), name, "plaintext", "x"); err != nil { // logs "didOpen" at debug
		t.Fatal(err)
	}
	if _, _, err := s.c.ExecuteCommand(ctx(t), "test.echo", echoArgs{Text: "sync"}); err != nil {
		t.Fatal(err)
	}
	if snap := s.c.Snapshot(); snap.HasLogMessage("didOpen") {
		t.Error("debug record mirrored at level info")
	}
	if err := s.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeConfiguration, &protocol.DidChangeConfigurationParams{Settings: protocol.LSPAny(`{"agentls":{"logLevel":"debug"}}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.c.CloseDocument(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	st := s.c.Await(2*time.Second, "the debug didClose record", func(st *lsptest.State) bool { return st.HasLogMessage("didClose") })
	for _, m := range st.LogMessages {
		if strings.Contains(m.Message, "didClose") && m.Type != protocol.MessageTypeLog {
			t.Errorf("debug record sent as type %v; want Log", m.Type)
		}
	}
}

// TestBaseURLSecretsNeverShown: a key in the base URL's user information or
// query, or pasted into baseURL by mistake (not a URL), reaches neither the
// client (logMessage, showMessage) nor the log.
func TestBaseURLSecretsNeverShown(t *testing.T) {
	const secret = "sk-in-the-url-SECRET"
	var logBuf lsptest.SyncBuffer
	level := new(slog.LevelVar)
	level.Set(slog.LevelDebug)
	s, svc := withSettings(t, lsptest.Config{InitializationOptions: map[string]any{
		"baseURL": "https://user:" + secret + "@models.example/v1?api-key=" + secret, "logLevel": "debug"}},
		server.WithLogger(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: level}), level))
	if got := svc.Host().Settings().BaseURL; !strings.Contains(got, secret) {
		t.Fatalf("baseURL = %q; the setting itself must be kept as given", got)
	}
	err := s.c.Notify(ctx(t), protocol.MethodWorkspaceDidChangeConfiguration, &protocol.DidChangeConfigurationParams{
		Settings: protocol.LSPAny(`{"agentls":{"baseURL":"` + secret + `"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := s.c.Await(2*time.Second, "a warning about baseURL", func(st *lsptest.State) bool { return st.HasShowMessage("baseURL") })
	for _, l := range strings.Split(s.c.Transcript(), "\n") {
		if strings.Contains(l, secret) && !strings.Contains(l, " -> ") {
			t.Errorf("server sent the key: %s", l)
		}
	}
	if strings.Contains(logBuf.String(), secret) {
		t.Errorf("the key is in the log:\n%s", logBuf.String())
	}
	if !st.HasLogMessage("REDACTED@models.example") {
		t.Errorf("log messages %+v; want the base URL with its user information redacted", st.LogMessages)
	}
}
