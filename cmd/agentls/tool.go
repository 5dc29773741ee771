package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// runTool runs one tool and prints what the model would read: the result
// text on stdout, exit status 1 when the result is an error.
//
//	agentls tool NAME 'JSON-ARGS' [--workspace DIR]
//	agentls tool NAME - < args.json
//	agentls tool --list
//	agentls tool --schema NAME
func runTool(ctx context.Context, io stdio, args []string) error {
	collectLate()
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	fs.SetOutput(io.err)
	dir := fs.String("workspace", ".", "workspace `DIR` (its root folder)")
	list := fs.Bool("list", false, "list the tools and exit")
	schema := fs.Bool("schema", false, "print the tool's description and JSON schema instead of running it")
	jsonOut := fs.Bool("json", false, "print the whole result as JSON (tool, args, text, isError, duration, data)")
	cpuProfile := fs.String("profile.cpu", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	memProfile := fs.String("profile.mem", "", "write a heap profile to this file when the tool is done")
	fs.Usage = func() {
		fmt.Fprintf(io.err, "Usage: agentls tool NAME 'JSON-ARGS' [--workspace DIR] [--json]\n       agentls tool NAME - < args.json\n       agentls tool --list | --schema NAME\n\nRuns one tool as the model would and prints what the model reads; exit status 1 when the result is an error.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Flags may come before or after the positional arguments.
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return &exitError{code: 2}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	stop, err := startProfiles(*cpuProfile, *memProfile)
	if err != nil {
		return err
	}
	defer stop(io.err)
	// grep's workers take one P per core, and the process has no more Ps
	// than cores: no editor waits on it, and Ps beyond the cores (which
	// the server keeps for the editor's requests) only had the walk's
	// goroutines contend with the workers, as more threads than cores.
	grep.LimitWorkers(runtime.GOMAXPROCS(0))
	defer grep.LimitWorkers(0)
	// No editor waits on this process: its search runs at the priority
	// of any other program, like rg.
	grep.RunAtNormalPriority()
	// Nor does anything else need a P while a read is in the kernel.
	grep.ReadWithoutHandoff()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{root}})
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer ws.Close()
	reg := tools.New(tools.Env{Workspace: ws, OneShot: true})
	defer reg.Close()
	// The language tools too, over agentls's own servers (started only
	// when one of them runs), as `agentls run` and ACP sessions have them.
	pool := langserver.NewPool(0)
	defer pool.Close()
	pool.Configure(ws.Roots(), nil, "")
	all := append(reg.Tools(), langserver.Tools(langserver.Env{Workspace: ws, Source: pool})...)
	find := func(name string) tools.Tool {
		for _, t := range all {
			if t.Name() == name {
				return t
			}
		}
		return nil
	}
	names := func() string {
		var n []string
		for _, t := range all {
			n = append(n, t.Name())
		}
		return strings.Join(n, ", ")
	}

	if *list {
		for _, t := range all {
			first, _, _ := strings.Cut(t.Description(), "\n")
			ro := ""
			if t.ReadOnly() {
				ro = " (read-only)"
			}
			fmt.Fprintf(io.out, "%-12s %s%s\n", t.Name(), first, ro)
		}
		return nil
	}
	if len(pos) == 0 || len(pos) > 2 {
		fs.Usage()
		return &exitError{code: 2}
	}
	name := pos[0]
	if *schema {
		t := find(name)
		if t == nil {
			return fmt.Errorf("unknown tool %q; valid tools: %s", name, names())
		}
		fmt.Fprintf(io.out, "%s\n\n%s\n", t.Description(), t.Schema())
		return nil
	}
	raw := "{}"
	if len(pos) == 2 {
		raw = pos[1]
	}
	if raw == "-" {
		b, err := readAll(io.in)
		if err != nil {
			return fmt.Errorf("read arguments from stdin: %w", err)
		}
		raw = string(b)
	}
	var res tools.Result
	if reg.Get(name) == nil && find(name) != nil {
		res, err = find(name).Run(ctx, json.RawMessage(raw))
		res.Tool, res.Args = name, json.RawMessage(raw)
	} else {
		res, err = reg.Run(ctx, name, json.RawMessage(raw))
	}
	if err != nil {
		return err
	}
	if *jsonOut {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(io.out, "%s\n", b)
	} else {
		fmt.Fprintln(io.out, res.Text)
	}
	if res.IsError {
		return &exitError{code: 1}
	}
	return nil
}

func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errors.New("no standard input")
	}
	return io.ReadAll(r)
}
