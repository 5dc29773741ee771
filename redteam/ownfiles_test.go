package redteam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	lspserver "github.com/agentls/agentls/lsp/server"
	"github.com/agentls/agentls/tools/sandbox"
	"github.com/agentls/agentls/workspace/ownfs"
)

// famOwn: a confined program, or the repository itself, puts a link where
// agentls later writes its own files (its log, its state, the workspace's
// .agentls), so agentls writes its log lines, reports, database or
// sessions into a file of the attacker's choosing (a file a shell
// sources).
const famOwn = "agentls's own files"

// ownHome makes a home folder outside /tmp (which the sandbox's mount
// namespace replaces: an attack there would hold for another reason) and
// points HOME, XDG_STATE_HOME, XDG_CACHE_HOME and XDG_CONFIG_HOME at it,
// as a user's defaults are. It returns the home folder and the victim, a
// file a shell sources, outside every folder the sandbox may write.
func ownHome(t *testing.T) (home, victim string) {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "agentls-redteam-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home = filepath.Join(base, "home")
	for _, d := range []string{".local/state/agentls", ".cache", ".config/agentls"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	victim = filepath.Join(home, ".bashrc")
	if err := os.WriteFile(victim, []byte("# the user's shell start-up file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return home, victim
}

// logLine is what the next agentls writes to its log: a record that holds
// text the repository chose (a prompt file's name).
func logLine(t *testing.T) (opened string) {
	t.Helper()
	f, opened, err := lspserver.OpenLogFile(lspserver.DefaultLogFile())
	if err != nil {
		t.Logf("no log file: %v", err)
		return ""
	}
	defer f.Close()
	slog.New(slog.NewTextHandler(f, nil)).Info("prompt file loaded", "name", "$(touch PWNED).md")
	return opened
}

// victimVerdict: escaped when the victim holds anything agentls wrote.
func victimVerdict(victim, before string, what string) outcome {
	if got := fileText(victim); got != before {
		return escaped("%s: the victim %s now holds %q", what, victim, got)
	}
	return held("%s: the victim is untouched", what)
}

// TestAgentlsOwnFiles: agentls's log, its user-level state and the
// workspace's .agentls are out of reach of confined programs, and a link
// planted at any of their names is refused, never followed.
func TestAgentlsOwnFiles(t *testing.T) {
	attempt(t, famOwn, "a sandboxed command replaces the log with a link", func(t *testing.T) outcome {
		home, victim := ownHome(t)
		before := fileText(victim)
		logPath := lspserver.DefaultLogFile()
		if !strings.HasPrefix(logPath, home) {
			t.Fatalf("the log %s is not in the home folder %s", logPath, home)
		}
		root := t.TempDir()
		// The build cache write proves the command ran with this home and
		// the sandbox's cache allowlist; the link is the attack.
		out := sandboxed(t, root, fmt.Sprintf(`echo ok > %s/.cache/go-build/probe && echo CACHE-WRITTEN; echo ATTEMPT; rm -f %s; ln -s %s %s && echo LINKED; true`,
			home, logPath, victim, logPath))
		if !strings.Contains(out, "CACHE-WRITTEN") || !strings.Contains(out, "ATTEMPT") {
			t.Fatalf("the attack did not run: %q", out)
		}
		opened := logLine(t)
		if fi, err := os.Lstat(logPath); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if o := victimVerdict(victim, before, "the log became a link"); o.escaped {
				return o
			}
			return escaped("the command replaced the log with a link (agentls opened %s)", opened)
		}
		if strings.Contains(out, "LINKED") {
			return escaped("the command says it linked the log")
		}
		return victimVerdict(victim, before, "the link was refused by the sandbox (the command ran: "+strings.TrimSpace(out)+")")
	})

	attempt(t, famOwn, "the log is already a link when agentls starts", func(t *testing.T) outcome {
		_, victim := ownHome(t)
		t.Setenv("TMPDIR", t.TempDir())
		before := fileText(victim)
		logPath := lspserver.DefaultLogFile()
		os.Remove(logPath)
		if err := os.Symlink(victim, logPath); err != nil {
			t.Fatal(err)
		}
		opened := logLine(t)
		if opened == "" {
			t.Fatal("agentls opened no log at all: the attack found nothing to write through")
		}
		if o := victimVerdict(victim, before, "log opened at "+opened); o.escaped {
			return o
		}
		if opened == logPath {
			return escaped("agentls opened the link %s", logPath)
		}
		return held("the link was not followed; the log went to %s and the victim is untouched", opened)
	})

	attempt(t, famOwn, "a sandboxed command writes into agentls's log and configuration folders", func(t *testing.T) outcome {
		home, _ := ownHome(t)
		var lines []string
		for _, d := range ownfs.Folders(os.Getenv) {
			lines = append(lines, fmt.Sprintf(`echo planted > %s/approved-mcp.json && echo WROTE:%s`, d, d))
		}
		out := sandboxed(t, t.TempDir(), "echo ATTEMPT; "+strings.Join(lines, "; ")+"; true")
		if !strings.Contains(out, "ATTEMPT") {
			t.Fatalf("the attack did not run: %q", out)
		}
		if strings.Contains(out, "WROTE:") {
			return escaped("a confined command wrote in agentls's folder: %s", out)
		}
		p, _ := sandbox.Plan(sandbox.WorkspaceWrite, []string{t.TempDir()}, false)
		for _, w := range p.Writable {
			for _, o := range ownfs.Folders(os.Getenv) {
				if strings.HasPrefix(o+"/", w+"/") || strings.HasPrefix(w+"/", o+"/") {
					return escaped("the sandbox may write %s, which reaches %s", w, o)
				}
			}
		}
		return held("both writes refused, and no writable folder of the plan holds %s/.local/state or .config/agentls", home)
	})

	// The repository ships links at the names agentls writes in .agentls.
	repoLinks := []struct {
		name, link string
		dir        bool // the link's target is a folder
	}{
		{".agentls itself", ".agentls", true},
		{".agentls/tasks", ".agentls/tasks", true},
		{".agentls/commands", ".agentls/commands", true},
		{".agentls/agentls.db", ".agentls/agentls.db", false},
	}
	for _, v := range repoLinks {
		attempt(t, famOwn, "the repository ships "+v.name+" as a link", func(t *testing.T) outcome {
			outside := t.TempDir()
			victim := filepath.Join(outside, "profile.sh")
			os.WriteFile(victim, []byte("# sourced by a shell\n"), 0o644)
			target := victim
			if v.dir {
				target = outside
			}
			// Output long enough to be cut: the full command log is kept
			// in .agentls/commands.
			line := `seq 1 20000; echo '$(touch PWNED)'`
			s := ownServer(t, func(root string) {
				if err := os.MkdirAll(filepath.Join(root, filepath.Dir(v.link)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(root, v.link)); err != nil {
					t.Fatal(err)
				}
			}, line)
			if len(s.model.Requests()) < 2 || !strings.Contains(lastToolResult(s), "20000") {
				t.Fatalf("the task did not run the command: %d model requests, result %q", len(s.model.Requests()), firstN(lastToolResult(s), 200))
			}
			if fileText(victim) != "# sourced by a shell\n" {
				return escaped("the victim now holds %q", firstN(fileText(victim), 200))
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				return escaped("agentls wrote outside the workspace, through the link: %q", names)
			}
			if !strings.Contains(s.logs.String(), "state folder refused") {
				return escaped("nothing was written outside, but the log does not say the state folder was refused")
			}
			return held("nothing written through the link; the log says the state folder was refused")
		})
	}

	attempt(t, famOwn, "the repository ships .agentls/acp-sessions.json.tmp as a link (ACP)", func(t *testing.T) outcome {
		outside := t.TempDir()
		victim := filepath.Join(outside, "profile.sh")
		os.WriteFile(victim, []byte("# sourced by a shell\n"), 0o644)
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, ".agentls"), 0o755)
		if err := os.Symlink(victim, filepath.Join(root, ".agentls", "acp-sessions.json.tmp")); err != nil {
			t.Fatal(err)
		}
		logs := &syncLog{}
		st := session.Defaults()
		st.BaseURL, st.Model = "http://127.0.0.1:1", "test-model"
		ar, cw := io.Pipe()
		cr, aw := io.Pipe()
		ctx, cancel := context.WithCancel(ctxFor(t))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = acp.Serve(ctx, ar, aw, acp.Options{Settings: st, Getenv: func(string) string { return apiKey },
				Logger: slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), nil)), DBPath: filepath.Join(t.TempDir(), "agentls.db")})
		}()
		t.Cleanup(func() { cancel(); cw.Close(); aw.Close(); <-done })
		conn := sdk.NewClientSideConnection(nullClient{}, cw, cr)
		conn.SetLogger(slog.New(slog.DiscardHandler))
		if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: root, McpServers: []sdk.McpServer{}}); err != nil {
			t.Fatal(err)
		}
		if fileText(victim) != "# sourced by a shell\n" {
			return escaped("the victim now holds %q", fileText(victim))
		}
		if !strings.Contains(logs.String(), "acp session") || !strings.Contains(logs.String(), "refused") {
			t.Fatalf("the session was never saved: the attack did not run\n%s", logs.String())
		}
		return held("the session was not saved through the link; the log says the state folder was refused")
	})

	attempt(t, famOwn, "the temporary fallback folder is pre-created by another user or as a link", func(t *testing.T) outcome {
		tmp := t.TempDir()
		t.Setenv("XDG_STATE_HOME", "")
		t.Setenv("HOME", "")
		t.Setenv("TMPDIR", tmp)
		theirs := t.TempDir()
		victim := filepath.Join(theirs, lspserver.LogFileName)
		os.WriteFile(victim, []byte("# theirs\n"), 0o644)
		p := filepath.Join(tmp, "agentls-"+strconv.Itoa(os.Getuid()))
		var results []string
		for _, plant := range []func() error{
			func() error { return os.Symlink(theirs, p) },
			func() error {
				if os.Getuid() != 0 {
					return errors.ErrUnsupported
				}
				if err := os.Mkdir(p, 0o777); err != nil {
					return err
				}
				return os.Chown(p, 65534, 65534)
			},
		} {
			os.RemoveAll(p)
			if err := plant(); errors.Is(err, errors.ErrUnsupported) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			if opened := logLine(t); opened != "" {
				return escaped("agentls logged to %s in a folder it does not own", opened)
			}
			results = append(results, "refused")
		}
		if len(results) == 0 {
			t.Fatal("no variant could be planted")
		}
		return victimVerdict(victim, "# theirs\n", fmt.Sprintf("the fallback was refused %d times", len(results)))
	})
}

// ownServer is newServer on a workspace prepare shaped first (the
// repository as cloned), with the scripted model running line through
// run_command in an edit task.
func ownServer(t *testing.T, prepare func(root string), line string) *server {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", apiKey)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"main.go": "package main\n"})
	prepare(root)
	turns := []fakemodel.Turn{
		{ToolCalls: []fakemodel.ToolCall{call("c1", "run_command", fmt.Sprintf(`{"command":%q}`, line))}},
		{Text: "Done.", FinishReason: "stop"},
	}
	model, err := fakemodel.Start(fakemodel.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	settings := map[string]any{"baseURL": model.URL(), "model": "test-model", "validate": "off", "approval": "auto"}
	// The user's own settings (the user settings file): from the client, a
	// model service the user never named would be asked about first.
	svc := lsp.NewService(lsp.ServiceOptions{Getenv: os.Getenv, UserDir: lsptest.UserSettingsDir(t, settings)})
	logs := &syncLog{}
	srv := lspserver.New(append(svc.Options(),
		lspserver.WithVersion("redteam"),
		lspserver.WithLogger(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}), nil),
	)...)
	c, _ := lsptest.Connect(t, srv, lsptest.Config{Roots: []string{root}})
	if _, err := c.Initialize(ctxFor(t)); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	s := &server{c: c, model: model, root: root, logs: logs}
	if _, err := s.run(t, map[string]any{"prompt": "run the build", "mode": "edit"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// nullClient is an ACP client that offers nothing.
type nullClient struct{ offersNothing }

func (nullClient) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }
func (nullClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}
