package agent

// Stand-in tools for the scenario suite, built on the real workspace
// package, used while the tools package (issue 4) has not landed. They keep
// the contract of tools.Tool and the argument names of the tools issue, run
// real commands in their own process group and apply edits through the
// task's guarded editor, so the scenarios exercise the same paths the real
// tools will. scenarioToolSet switches to tools.New as soon as it exists.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

func standinTools(ws *workspace.Workspace, g *Guard) []tools.Tool {
	ed := g.Editor(ws, ws.DiskEditor())
	return []tools.Tool{
		&fakeTool{name: "list_files", ro: true, run: func(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
			var a struct{ Pattern string }
			_ = json.Unmarshal(raw, &a)
			if a.Pattern == "" {
				a.Pattern = "**"
			}
			ps, err := ws.Glob(a.Pattern)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			var b strings.Builder
			for _, p := range ps {
				b.WriteString(p.String() + "\n")
			}
			if len(ps) == 0 {
				return tools.Result{Text: fmt.Sprintf("no file matches %q in the workspace", a.Pattern)}, nil
			}
			return tools.Result{Text: b.String(), Evidence: fmt.Sprintf("list_files %q: %d files\n%s", a.Pattern, len(ps), tail(b.String(), 600))}, nil
		}},
		&fakeTool{name: "grep", ro: true, run: func(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
			var a struct{ Pattern, Path string }
			if err := json.Unmarshal(raw, &a); err != nil || a.Pattern == "" {
				return tools.Result{IsError: true, Text: `error: grep needs {"pattern": "..."}`}, nil
			}
			re, err := regexp.Compile(a.Pattern)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: bad pattern: " + err.Error()}, nil
			}
			var b strings.Builder
			n := 0
			for _, p := range ws.Files() {
				if a.Path != "" && !strings.HasPrefix(p.String(), strings.TrimPrefix(a.Path, "./")) {
					continue
				}
				f, err := ws.ReadFile(ctx, p)
				if err != nil {
					continue
				}
				for i, line := range strings.Split(f.Text, "\n") {
					if re.MatchString(line) {
						n++
						fmt.Fprintf(&b, "%s:%d: %s\n", p, i+1, line)
					}
				}
			}
			if n == 0 {
				return tools.Result{Text: fmt.Sprintf("no match for %q in the workspace", a.Pattern)}, nil
			}
			return tools.Result{Text: b.String()}, nil
		}},
		&fakeTool{name: "read_file", ro: true, run: func(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
			var a struct{ Path string }
			_ = json.Unmarshal(raw, &a)
			p, err := ws.Resolve(a.Path)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			f, err := ws.ReadFile(ctx, p)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			return tools.Result{Text: f.Text, Files: []string{p.String()}}, nil
		}},
		&fakeTool{name: "write_file", run: func(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
			var a struct{ Path, Content string }
			_ = json.Unmarshal(raw, &a)
			p, err := ws.Resolve(a.Path)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			fe := workspace.FileEdit{Path: p, Create: true, Edits: []workspace.TextEdit{{NewText: a.Content}}}
			if f, err := ws.ReadFile(ctx, p); err == nil {
				end := workspace.PositionOf(f.Text, len(f.Text))
				fe = workspace.FileEdit{Path: p, BaseHash: f.Hash, BaseVersion: f.Version, Edits: []workspace.TextEdit{{Range: workspace.Range{End: end}, NewText: a.Content}}}
			}
			if err := ed.Apply(ctx, "write "+p.String(), []workspace.FileEdit{fe}); err != nil {
				if errors.Is(err, ErrNotExecuting) || ctx.Err() != nil {
					return tools.Result{}, err
				}
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			return tools.Result{Text: "wrote " + p.String(), Changed: []string{p.String()}}, nil
		}},
		&fakeTool{name: "edit_file", run: func(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
			var a struct {
				Path string
				Old  string `json:"old_string"`
				New  string `json:"new_string"`
			}
			_ = json.Unmarshal(raw, &a)
			p, err := ws.Resolve(a.Path)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			f, err := ws.ReadFile(ctx, p)
			if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			i := strings.Index(f.Text, a.Old)
			if i < 0 || a.Old == "" {
				return tools.Result{IsError: true, Text: "error: old text not found in " + p.String() + "; read the file again"}, nil
			}
			r := workspace.Range{Start: workspace.PositionOf(f.Text, i), End: workspace.PositionOf(f.Text, i+len(a.Old))}
			fe := workspace.FileEdit{Path: p, BaseHash: f.Hash, BaseVersion: f.Version, Edits: []workspace.TextEdit{{Range: r, NewText: a.New}}}
			if err := ed.Apply(ctx, "edit "+p.String(), []workspace.FileEdit{fe}); err != nil {
				if errors.Is(err, ErrNotExecuting) || ctx.Err() != nil {
					return tools.Result{}, err
				}
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			return tools.Result{Text: "edited " + p.String(), Changed: []string{p.String()}}, nil
		}},
		&fakeTool{name: "run_command", run: func(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
			var a struct{ Command string }
			_ = json.Unmarshal(raw, &a)
			if err := g.Check(ctx); err != nil {
				return tools.Result{}, err
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(cctx, "sh", "-c", a.Command)
			cmd.Dir = ws.Roots()[0]
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = time.Second
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			if ctx.Err() != nil {
				return tools.Result{}, ctx.Err()
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				return tools.Result{IsError: true, Text: "error: " + err.Error()}, nil
			}
			text := fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			return tools.Result{Text: text, IsError: code != 0, Evidence: "$ " + a.Command + "\n" + tail(text, 600)}, nil
		}},
		&fakeTool{name: "update_plan", ro: true, run: planTool().run},
	}
}
