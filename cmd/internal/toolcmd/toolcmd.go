// Package toolcmd is `agentls tool`: it runs one tool as the model would
// and prints what the model reads. Both programs run it: agentls, the
// small program users start, for the workspace's own tools, and
// agentls-core, the whole of agentls, which adds the language tools.
package toolcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/agentls/agentls/cmd/internal/profile"
	"github.com/agentls/agentls/internal/rawsys"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/grep"
	"github.com/agentls/agentls/workspace"
)

// Exit is the exit status of a run that did not succeed: 1 when the tool's
// result is an error, 2 for a command line that is wrong. Its message has
// already been printed.
type Exit int

func (e Exit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Options says what a program has beyond the workspace's own tools.
type Options struct {
	// Extra makes the tools this program has beyond the registry's (the
	// language tools, over agentls's own language servers) for ws; close
	// is called when the command ends. nil: none.
	Extra func(ws *workspace.Workspace) (extra []tools.Tool, close func())
	// Elsewhere, when not nil, runs the whole command in the program that
	// has every tool. It is called instead of running here for --list and
	// for a tool this program does not have; it does not return when it
	// succeeds (the process is replaced).
	Elsewhere func() error
}

// Run runs `agentls tool` with args (those after "tool"):
//
//	agentls tool NAME 'JSON-ARGS' [--workspace DIR]
//	agentls tool NAME - < args.json
//	agentls tool --list
//	agentls tool --schema NAME
func Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string, o Options) error {
	collectLate()
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("workspace", ".", "workspace `DIR` (its root folder)")
	list := fs.Bool("list", false, "list the tools and exit")
	schema := fs.Bool("schema", false, "print the tool's description and JSON schema instead of running it")
	jsonOut := fs.Bool("json", false, "print the whole result as JSON (tool, args, text, isError, duration, data)")
	cpuProfile := fs.String("profile.cpu", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	memProfile := fs.String("profile.mem", "", "write a heap profile to this file when the tool is done")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: agentls tool NAME 'JSON-ARGS' [--workspace DIR] [--json]\n       agentls tool NAME - < args.json\n       agentls tool --list | --schema NAME\n\nRuns one tool as the model would and prints what the model reads; exit status 1 when the result is an error.\n\nFlags:\n")
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
			return Exit(2)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if !*list && (len(pos) == 0 || len(pos) > 2) {
		fs.Usage()
		return Exit(2)
	}
	if o.Elsewhere != nil && (*list || !ownTool(pos[0])) {
		return o.Elsewhere()
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	stop, err := profile.Start(*cpuProfile, *memProfile)
	if err != nil {
		return err
	}
	defer stop(stderr)
	// grep's workers take one P per core, and the process has no more Ps
	// than cores: no editor waits on it, and Ps beyond the cores (which
	// the server keeps for the editor's requests) only had the walk's
	// goroutines contend with the workers, as more threads than cores.
	grep.LimitWorkers(runtime.GOMAXPROCS(0))
	defer grep.LimitWorkers(0)
	// No editor waits on this process: its search runs at the priority
	// of any other program, like rg.
	grep.RunAtNormalPriority()
	// Nor does anything else need a P while the walk or a search is in
	// the kernel.
	rawsys.WithoutHandoff()
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{root}})
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer ws.Close()
	reg := tools.New(tools.Env{Workspace: ws, OneShot: true})
	defer reg.Close()
	all := reg.Tools()
	if o.Extra != nil {
		extra, closeExtra := o.Extra(ws)
		defer closeExtra()
		all = append(all, extra...)
	}
	find := func(name string) tools.Tool {
		for _, t := range all {
			if t.Name() == name {
				return t
			}
		}
		return nil
	}

	if *list {
		for _, t := range all {
			first, _, _ := strings.Cut(t.Description(), "\n")
			ro := ""
			if t.ReadOnly() {
				ro = " (read-only)"
			}
			fmt.Fprintf(stdout, "%-12s %s%s\n", t.Name(), first, ro)
		}
		return nil
	}
	name := pos[0]
	if *schema {
		t := find(name)
		if t == nil {
			var n []string
			for _, t := range all {
				n = append(n, t.Name())
			}
			return fmt.Errorf("unknown tool %q; valid tools: %s", name, strings.Join(n, ", "))
		}
		fmt.Fprintf(stdout, "%s\n\n%s\n", t.Description(), t.Schema())
		return nil
	}
	raw := "{}"
	if len(pos) == 2 {
		raw = pos[1]
	}
	if raw == "-" {
		if stdin == nil {
			return errors.New("read arguments from stdin: no standard input")
		}
		b, err := io.ReadAll(stdin)
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
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		fmt.Fprintln(stdout, res.Text)
	}
	if res.IsError {
		return Exit(1)
	}
	return nil
}

// ownTool reports whether name is one of the workspace registry's tools,
// which every program that runs this command has.
func ownTool(name string) bool {
	r := tools.New(tools.Env{})
	defer r.Close()
	return r.Get(name) != nil
}

// oneShotMemoryLimit is where the collector of a one-shot command
// (`agentls tool`) starts: below it the process never collects. Such a
// process lives a fraction of a second and allocates a few megabytes, yet
// the collector's default goal (4 MB at the start) ran three or four
// cycles in a grep of GOROOT/src, each stopping the world for up to 6 ms
// while the search's threads came to a stop: 7% of its CPU and, on a
// loaded machine, a quarter of its time.
const oneShotMemoryLimit = 256 << 20

// collectLate turns the collector off until the Go memory reaches
// oneShotMemoryLimit, unless the user set GOGC or GOMEMLIMIT (the runtime
// has applied them, and they win).
func collectLate() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(oneShotMemoryLimit)
	}
}
