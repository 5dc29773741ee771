package agentls_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every plugin forwards the user's settings whole: a real Neovim and a
// real Emacs, each with its plugin and a settings table holding every key
// of editors/contract.json's settings schema, start the real `agentls
// serve`, whose log says where each setting it applied came from
// ("sources": name=client for the client's options). A key a plugin drops,
// or one the server does not know or refuses, fails the test.

// everySetting is a valid value of each setting of the schema; a setting
// added to the schema without a value here fails the test.
var everySetting = map[string]any{
	"model":               "model-all-keys",
	"baseURL":             "http://127.0.0.1:9/v1",
	"apiKeyEnv":           "AGENTLS_TEST_KEY",
	"logLevel":            "info",
	"approval":            "deny",
	"allowCommands":       []string{"go test"},
	"safeCommands":        []string{"mytool lint"},
	"allowSecretReads":    []string{".env.example"},
	"checkCommand":        "go vet ./...",
	"validate":            "off",
	"maxTurns":            7,
	"maxTokens":           100000,
	"maxTime":             "90s",
	"contextWindow":       64000,
	"showReport":          true,
	"sandbox":             "off",
	"commandNetwork":      true,
	"review":              "always",
	"maxCompletionTokens": 1000,
	"temperature":         0.5,
	"extraBody":           map[string]any{"num_ctx": 4096},
	"azure":               map[string]any{"apiVersion": "2024-10-21", "deployment": "d1"},
	"languageServers":     map[string]any{"go": map[string]any{"command": "gopls"}},
	"recordings":          false,
	"mcpServers":          map[string]any{"echo": map[string]any{"command": "true"}},
	"prices":              map[string]any{"model-all-keys": map[string]any{"input": 1, "output": 2}},
	"models":              []any{map[string]any{"name": "model-all-keys"}},
	"completion":          map[string]any{"enabled": true, "model": "fim-all-keys", "timeoutMs": 3000, "maxTokens": 64, "debounceMs": 50},
	"hooks":               map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "true"}}}}},
}

// schemaSettings are the setting names of editors/contract.json.
func schemaSettings(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("editors", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Settings []struct {
			Name string `json:"name"`
		} `json:"settings"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range c.Settings {
		out = append(out, s.Name)
	}
	if len(out) == 0 {
		t.Fatal("editors/contract.json has no settings schema")
	}
	return out
}

// settingsFixture builds agentls, writes every setting as JSON and a
// workspace with a Go file; it returns the binary, the settings file, the
// workspace and the server's log file.
func settingsFixture(t *testing.T) (bin, settingsFile, root, logFile string) {
	t.Helper()
	for _, name := range schemaSettings(t) {
		if _, ok := everySetting[name]; !ok {
			t.Fatalf("the schema's setting %q has no value in everySetting", name)
		}
	}
	dir := t.TempDir()
	bin = buildOnce(t)
	b, _ := json.Marshal(everySetting)
	settingsFile = filepath.Join(dir, "settings.json")
	if err := os.WriteFile(settingsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, settingsFile, root, filepath.Join(dir, "agentls.log")
}

var built struct {
	sync.Once
	bin string
	err error
	out []byte
}

// buildOnce builds agentls once for the editor tests of this run.
func buildOnce(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		dir, err := os.MkdirTemp("", "agentls-settings-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "agentls")
		built.out, built.err = exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/agentls", "./cmd/agentls-core").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

// editorEnv is the environment of an editor run: no user settings file,
// no key, a fresh home.
func editorEnv(t *testing.T) []string {
	env := []string{"HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLS_MODEL":
		default:
			env = append(env, kv)
		}
	}
	return env
}

var sourcesRE = regexp.MustCompile(`msg="settings at initialize".* sources="([^"]*)"`)

// awaitSources waits (at most two minutes, checking the condition) for the
// server's log line of the settings at initialize, and returns the
// settings it took from the client.
func awaitSources(t *testing.T, logFile string, editor *exec.Cmd, out *strings.Builder) map[string]bool {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- editor.Wait() }()
	deadline := time.After(2 * time.Minute)
	for {
		b, _ := os.ReadFile(logFile)
		if m := sourcesRE.FindSubmatch(b); m != nil {
			got := map[string]bool{}
			for _, kv := range strings.Fields(string(m[1])) {
				if name, src, ok := strings.Cut(kv, "="); ok && src == "client" {
					got[name] = true
				}
			}
			if strings.Contains(string(b), `msg="invalid setting"`) {
				t.Errorf("the server refused settings the plugin sent:\n%s", grepLines(string(b), "invalid setting"))
			}
			return got
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logFile)
			t.Fatalf("the editor exited (%v) before the server logged its settings; editor output:\n%s\nserver log:\n%s", err, out.String(), b)
		case <-deadline:
			t.Fatalf("no settings logged by the server in 2 minutes; editor output:\n%s\nserver log:\n%s", out.String(), b)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// checkEveryKey fails for each schema setting the server did not get from
// the client.
func checkEveryKey(t *testing.T, editor string, got map[string]bool) {
	t.Helper()
	for _, name := range schemaSettings(t) {
		if !got[name] {
			t.Errorf("%s: the setting %q did not reach the server (it took %d from the client)", editor, name, len(got))
		}
	}
}

func TestNeovimForwardsEverySetting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Neovim and agentls")
	}
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Skip("nvim is not installed (make install puts it there)")
	}
	bin, settingsFile, root, logFile := settingsFixture(t)
	plugin, _ := filepath.Abs(filepath.Join("editors", "nvim"))
	init := filepath.Join(t.TempDir(), "init.lua")
	script := fmt.Sprintf(`vim.opt.rtp:prepend(%q)
local s = vim.fn.json_decode(table.concat(vim.fn.readfile(%q), '\n'))
require('agentls').setup({ cmd = { %q, 'serve', '--log-file', %q }, settings = s })
vim.cmd('edit %s')
`, plugin, settingsFile, bin, logFile, filepath.Join(root, "main.go"))
	if err := os.WriteFile(init, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nvim, "--headless", "-n", "-i", "NONE", "-u", init)
	cmd.Dir, cmd.Env = root, editorEnv(t)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	checkEveryKey(t, "Neovim", awaitSources(t, logFile, cmd, &out))
}

func TestEmacsForwardsEverySetting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Emacs and agentls")
	}
	emacs, err := exec.LookPath("emacs")
	if err != nil {
		t.Skip("emacs is not installed (make install puts it there)")
	}
	bin, settingsFile, root, logFile := settingsFixture(t)
	lisp := fmt.Sprintf(`(progn
  (setq agentls-program (list %q "serve" "--log-file" %q))
  (setq agentls-initialization-options
        (json-parse-string (with-temp-buffer (insert-file-contents %q) (buffer-string))
                           :object-type 'plist :array-type 'array :false-object :json-false :null-object nil))
  (find-file %q)
  (agentls--connection %q)
  (while t (sleep-for 0.1)))`, bin, logFile, settingsFile, filepath.Join(root, "main.go"), root)
	el, _ := filepath.Abs(filepath.Join("editors", "emacs"))
	cmd := exec.Command(emacs, "--batch", "-Q", "-L", el, "-l", "agentls", "--eval", lisp)
	cmd.Dir, cmd.Env = root, editorEnv(t)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	checkEveryKey(t, "Emacs", awaitSources(t, logFile, cmd, &out))
}

// TestMain removes the agentls the editor tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		_ = os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}
