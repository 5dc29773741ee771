package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentls/agentls/lsp/lsptest"
)

// buildAgentls builds agentls as make install does into dir and returns
// the path of the program users start: agentls (../agentls), which runs
// `agentls tool` itself and becomes agentls-core, this command, beside it
// for everything else.
func buildAgentls(tb testing.TB, dir string) string {
	tb.Helper()
	bin := filepath.Join(dir, "agentls")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version=stdio-test", "-o", dir+string(filepath.Separator), ".", "../agentls")
	// Static, as make build and make install build it: what the user runs
	// (its start-up differs from a cgo build's: 36 against 28 ms of CPU
	// for agentls version, perf stat -r 30).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveEnv is the environment of a served process: the test's, with the
// cache directory (where the log file goes) in a temporary directory.
func serveEnv(tb testing.TB) []string {
	return append(os.Environ(), "XDG_CACHE_HOME="+tb.TempDir(), "HOME="+tb.TempDir(), "XDG_CONFIG_HOME="+tb.TempDir())
}

// userSettingsEnv is serveEnv with a user folder whose settings file
// holds settings (the user's own settings, as the loader reads them).
func userSettingsEnv(tb testing.TB, settings map[string]any) []string {
	tb.Helper()
	cfg := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg, "agentls"), 0o700); err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(settings)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "agentls", "settings.json"), b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return append(serveEnv(tb), "XDG_CONFIG_HOME="+cfg)
}

func ctxT(tb testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	tb.Cleanup(cancel)
	return c
}

// TestServeStdio drives the built binary over real stdio.
func TestServeStdio(t *testing.T) {
	bin := buildAgentls(t, t.TempDir())

	t.Run("initialize, shutdown, exit: code 0", func(t *testing.T) {
		p := lsptest.StartProcess(t, bin, []string{"serve", "--log-level", "debug"}, serveEnv(t), lsptest.Config{WorkDoneProgress: true})
		start := time.Now()
		res, err := p.Initialize(ctxT(t))
		took := time.Since(start)
		if err != nil {
			t.Fatalf("initialize: %v", err)
		}
		if took > 2*time.Second {
			t.Errorf("initialize took %v; want well under 2 s (see BenchmarkServeInitialize)", took)
		}
		if v, _ := res.ServerInfo.Version.Get(); res.ServerInfo.Name != "agentls" || v != "stdio-test" {
			t.Errorf("serverInfo = %+v; want agentls stdio-test", res.ServerInfo)
		}
		if err := p.Shutdown(ctxT(t)); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		if err := p.Exit(ctxT(t)); err != nil {
			t.Fatalf("exit: %v", err)
		}
		if code, err := p.Wait(5 * time.Second); err != nil || code != 0 {
			t.Errorf("exit code = %d, %v; want 0", code, err)
		}
	})

	t.Run("exit without shutdown: code 1", func(t *testing.T) {
		p := lsptest.StartProcess(t, bin, nil, serveEnv(t), lsptest.Config{})
		if _, err := p.Initialize(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if err := p.Exit(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if code, err := p.Wait(5 * time.Second); err != nil || code != 1 {
			t.Errorf("exit code = %d, %v; want 1", code, err)
		}
	})

	t.Run("closing stdin ends the process within 1 s", func(t *testing.T) {
		p := lsptest.StartProcess(t, bin, []string{"serve"}, serveEnv(t), lsptest.Config{})
		if _, err := p.Initialize(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := p.CloseStdin(); err != nil {
			t.Fatal(err)
		}
		code, err := p.Wait(time.Second)
		if err != nil {
			t.Fatalf("after closing stdin: %v (%v)", err, time.Since(start))
		}
		if code != 1 {
			t.Errorf("exit code = %d; want 1 (no shutdown came)", code)
		}
		t.Logf("ended %v after stdin closed", time.Since(start))
	})

	t.Run("1,000 garbage frames: no crash, every request answered", func(t *testing.T) {
		cmd := exec.Command(bin, "serve", "--log-file", filepath.Join(t.TempDir(), "log"))
		cmd.Env = serveEnv(t)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		frames := lsptest.GarbageFrames(2026, 1000)
		if err := lsptest.ReplayGarbage(stdin, stdout, frames, 30*time.Second); err != nil {
			t.Error(err)
		}
		// Still alive and orderly: the shutdown was answered; exit ends it with 0.
		if _, err := stdin.Write([]byte("Content-Length: 33\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}")); err != nil {
			t.Fatal(err)
		}
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("process ended with %v; want exit code 0", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("process did not exit")
		}
	})
}
