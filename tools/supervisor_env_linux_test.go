package tools

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/tools/sandbox"
)

// gcc builds the C source src into out with args; the machines this suite
// runs on have gcc, and without it this test proves nothing: it fails.
func gcc(t *testing.T, out, src string, args ...string) {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to build the workspace's libraries: %v", err)
	}
	cmd := exec.Command(cc, append(append([]string{}, args...), "-o", out, src)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, b)
	}
}

// TestSupervisorLoadsNothingOfTheWorkspace: the supervisor is started
// outside the workspace with an environment of its own, so neither an
// LD_PRELOAD nor an LD_LIBRARY_PATH with an empty entry (the current
// folder) makes it load a library of the workspace before it is confined;
// the command gets its environment and folder inside the confinement. The
// supervisor here is this test binary, which is dynamically linked (cgo,
// -race), so the loader would act on it as on an agentls built with cgo.
// Each library's constructor writes the image of the process that loaded
// it: the command (the attack is live) may appear, the supervisor never.
func TestSupervisorLoadsNothingOfTheWorkspace(t *testing.T) {
	if !sandbox.Installed() {
		t.Fatal("sandbox.Main did not run in this test binary")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := elf.Open(self); err == nil {
		dynamic := false
		for _, p := range f.Progs {
			dynamic = dynamic || p.Type == elf.PT_INTERP
		}
		f.Close()
		t.Logf("supervisor image %s, dynamically linked: %v", self, dynamic)
	}
	// Outside /tmp, which the sandbox replaces: a program the command can
	// run lives in the workspace.
	ranBin := filepath.Join(t.TempDir(), "ran")
	gcc(t, ranBin, filepath.Join("testdata", "loader", "ran.c"), "-static", "-O1")
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}

	type variant struct {
		name string
		// plant puts the workspace's libraries in ws and returns the
		// command's environment and extra variables.
		plant func(t *testing.T, ws, marks string) (env, extra []string)
		argv  []string
		// static: the command is a static program in the workspace (a
		// fake libc breaks every dynamic one, the command's too).
		static bool
		// live: the command itself loads the library (its mark proves the
		// poison works here); otherwise control runs a dynamic program the
		// same way outside agentls and must see the library loaded.
		live bool
	}
	lib := func(t *testing.T, path, marks string) {
		gcc(t, path, filepath.Join("testdata", "loader", "mark.c"), "-shared", "-fPIC", "-DMARKER=\""+marks+"\"")
	}
	base := func(extra ...string) []string {
		return append([]string{"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}, extra...)
	}
	// ExtraEnv is how a program's own variables arrive (an MCP server's
	// "env"); the base environment passes CommandEnv's allowlist, which
	// keeps LD_LIBRARY_PATH and drops LD_PRELOAD.
	variants := []variant{
		{name: "LD_PRELOAD naming a workspace library, from a server's env", argv: []string{sh, "-c", "echo ran"}, live: true,
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "evil.so"), marks)
				return base(), []string{"LD_PRELOAD=" + filepath.Join(ws, "evil.so")}
			}},
		{name: "LD_PRELOAD with a relative path, from a server's env", argv: []string{sh, "-c", "echo ran"}, live: true,
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "evil.so"), marks)
				return base(), []string{"LD_PRELOAD=./evil.so"}
			}},
		{name: "bare LD_PRELOAD found through an empty LD_LIBRARY_PATH entry", argv: []string{sh, "-c", "echo ran"}, live: true,
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "libevil.so"), marks)
				return base("LD_LIBRARY_PATH=:/usr/local/lib"), []string{"LD_PRELOAD=libevil.so"}
			}},
		{name: "LD_PRELOAD in the user's environment", argv: []string{sh, "-c", "echo ran"},
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "evil.so"), marks)
				return base("LD_PRELOAD=" + filepath.Join(ws, "evil.so")), nil
			}},
		{name: "a workspace libc.so.6 through an empty LD_LIBRARY_PATH entry", static: true,
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "libc.so.6"), marks)
				return base("LD_LIBRARY_PATH=:/usr/local/lib"), nil
			}},
		{name: "a workspace libc.so.6 through a trailing empty entry", static: true,
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "libc.so.6"), marks)
				return base("LD_LIBRARY_PATH=/usr/local/lib:"), nil
			}},
		{name: "a workspace libc.so.6 through a dot entry, from a server's env", static: true,
			plant: func(t *testing.T, ws, marks string) ([]string, []string) {
				lib(t, filepath.Join(ws, "libc.so.6"), marks)
				return base(), []string{"LD_LIBRARY_PATH=."}
			}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ws := t.TempDir()
			marks := filepath.Join(ws, "loaded-by.txt")
			env, extra := v.plant(t, ws, marks)
			argv := v.argv
			if v.static {
				ran := filepath.Join(ws, "ran")
				copyExec(t, ranBin, ran)
				argv = []string{ran}
			}
			if !v.live {
				// The poison is live: a dynamic program run the plain way
				// in the workspace with this environment loads the
				// workspace's library (it marks, or the loader fails on
				// the fake libc).
				c := exec.Command(sh, "-c", "true")
				c.Dir, c.Env = ws, append(env, extra...)
				out, err := c.CombinedOutput()
				_, marked := os.Stat(marks)
				if err == nil && marked != nil {
					t.Fatalf("control: %s with this environment in the workspace loaded nothing of it (%s)", sh, out)
				}
				os.Remove(marks)
				out = bytes.TrimSpace(out)
				if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
					out = out[i+1:]
				}
				t.Logf("control: %v %s", err, out)
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, RunSpec{
				Argv: argv, Dir: ws, Env: env, ExtraEnv: extra,
				Stdout: &stdout, Stderr: &stderr,
				Sandbox: SandboxOptions{Roots: []string{ws}},
			})
			if err != nil {
				t.Fatalf("Run: %v (stderr %q)", err, stderr.String())
			}
			if res.ExitCode != 0 || strings.TrimSpace(stdout.String()) != "ran" {
				t.Fatalf("the command did not run whole: exit %d, stdout %q, stderr %q, sandbox %s", res.ExitCode, stdout.String(), stderr.String(), res.Sandbox)
			}
			b, _ := os.ReadFile(marks)
			lines := strings.Fields(string(b))
			for _, l := range lines {
				if l != argv[0] {
					t.Errorf("the workspace's library was loaded by %s, not only by the command %s", l, argv[0])
				}
			}
			if v.live && len(lines) == 0 {
				t.Errorf("the command %s did not load the library: its environment did not reach it (marks %q)", argv[0], b)
			}
			t.Logf("sandbox %s; loaded by %s", res.Sandbox, strconv.Quote(string(b)))
		})
	}
}

func copyExec(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
