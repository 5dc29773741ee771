package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolCommand: `agentls tool` prints what the model reads, exits 1 on
// an error result, and accepts flags after the arguments and JSON on stdin.
func TestToolCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/b/deep.go"), []byte("package b\n\nfunc Deep() {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/deep\n\ngo 1.22\n"), 0o644)
	tests := []struct {
		args  []string
		stdin string
		code  int
		out   string
	}{
		{[]string{"tool", "list_files", `{"pattern":"*.go"}`, "--workspace", dir}, "", 0, "a/b/deep.go\n(1 file matching **/*.go)\n"},
		{[]string{"tool", "--workspace", dir, "grep", `{"pattern":"func \\w+\\(\\)"}`}, "", 0, "a/b/deep.go:3: func Deep() {}\n"},
		{[]string{"tool", "read_file", "-", "--workspace", dir}, `{"file_path":"a/b/deep.go"}`, 0, "     3\tfunc Deep() {}\n"},
		{[]string{"tool", "read_file", `{"path":"nope.go"}`, "--workspace", dir}, "", 1, "no such file: nope.go"},
		{[]string{"tool", "frobnicate", `{}`, "--workspace", dir}, "", 1, "valid tools: list_files, grep"},
		{[]string{"tool", "read_file", `{"path":`, "--workspace", dir}, "", 1, "not valid JSON"},
		{[]string{"tool", "--list", "--workspace", dir}, "", 0, "run_command"},
		{[]string{"tool", "--schema", "edit_file", "--workspace", dir}, "", 0, `"old_string":{"type":"string"`},
		// The language tools, as a task has them.
		{[]string{"tool", "--list", "--workspace", dir}, "", 0, "rename_symbol"},
		{[]string{"tool", "--schema", "rename_symbol", "--workspace", dir}, "", 0, `"new_name"`},
		{[]string{"tool", "definition", `{"file":"a/b/deep.go","symbol":"Deep"}`, "--workspace", dir}, "", 0, "a/b/deep.go:3"},
		{[]string{"tool"}, "", 2, ""},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := mainExit(tt.args, stdio{in: strings.NewReader(tt.stdin), out: &out, err: &errb})
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("agentls %q = exit %d\nstdout: %s\nstderr: %s\nwant exit %d and %q", tt.args, code, out.String(), errb.String(), tt.code, tt.out)
		}
	}
	var out bytes.Buffer
	mainExit([]string{"tool", "run_command", `{"argv":["echo","hi"]}`, "--json", "--workspace", dir}, stdio{in: strings.NewReader(""), out: &out, err: &out})
	var res struct {
		Tool     string
		IsError  bool
		Duration int64
		Data     struct{ ExitCode int }
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Tool != "run_command" || res.IsError || res.Duration <= 0 {
		t.Errorf("--json output %s: %+v %v", out.String(), res, err)
	}
}

// TestToolWritesTheProfilesAskedFor: --profile.cpu and --profile.mem
// leave a CPU and a heap profile (gzipped protobuf, as go tool pprof reads
// them) once the tool has run, and the tool's output is unchanged.
func TestToolWritesTheProfilesAskedFor(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc Needle() {}\n"), 0o644)
	cpu, mem := filepath.Join(t.TempDir(), "tool.cpu"), filepath.Join(t.TempDir(), "tool.mem")
	var out, errb bytes.Buffer
	code := mainExit([]string{"tool", "grep", `{"pattern":"Needle"}`, "--workspace", dir, "--profile.cpu", cpu, "--profile.mem", mem},
		stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != 0 || !strings.Contains(out.String(), "a.go:3: func Needle() {}") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	for _, f := range []string{cpu, mem} {
		b, err := os.ReadFile(f)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, %v; want a gzipped profile", filepath.Base(f), len(b), err)
		}
	}
}
