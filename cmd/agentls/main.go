// Command agentls is the program users, editors and ACP clients start. It
// is small, so that it starts in a few milliseconds: `agentls tool` for the
// workspace's own tools (list_files, grep, read_file, edit_file,
// write_file, run_command, update_plan) runs here, and every other command
// runs in agentls-core, the whole of agentls, installed beside it, which
// this process becomes (execve: the same process, arguments, standard
// streams and environment; an editor that started `agentls serve` talks to
// agentls-core on the same pipes and signals the same pid).
//
// Why two programs: a Go program initializes every package it links
// before main runs, and agentls-core links the LSP and ACP servers, the
// session store (SQLite in Go), the model client and its tokenizer, the
// Markdown renderer and the MCP SDK. That costs a server nothing it would
// notice once, but it was a fifth of a search of Go's own tree made from
// the shell (docs/performance.md). TestFrontLinksNoneOfTheServer keeps
// those packages out of this one.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agentls/agentls/cmd/internal/toolcmd"
	"github.com/agentls/agentls/tools/sandbox"
)

// CoreName is the file name of the whole of agentls, beside this program.
const CoreName = "agentls-core"

// Started with sandbox.Arg, this program is the supervisor of one command
// that `agentls tool run_command` runs (see package sandbox).
func init() { sandbox.Main() }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tool" {
		os.Exit(runTool(os.Args[2:]))
	}
	err := becomeCore()
	fmt.Fprintf(os.Stderr, "agentls: %v\n", err)
	os.Exit(127)
}

// runTool runs `agentls tool` here when the tool is one of the workspace's
// own, else in agentls-core (which has the language tools and the whole
// list).
func runTool(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels the tool; a second one ends the process.
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := toolcmd.Run(ctx, os.Stdin, os.Stdout, os.Stderr, args, toolcmd.Options{Elsewhere: becomeCore})
	var code toolcmd.Exit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	default:
		fmt.Fprintf(os.Stderr, "agentls tool: %v\n", err)
		return 1
	}
}

// becomeCore replaces this process with agentls-core, found beside this
// program's own file (links resolved), with the same arguments and
// environment. It returns only when that fails.
func becomeCore() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find %s: %w", CoreName, err)
	}
	core := filepath.Join(filepath.Dir(exe), CoreName)
	err = syscall.Exec(core, os.Args, os.Environ())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is missing: it is the rest of agentls, and `make install` (or `go install github.com/agentls/agentls/cmd/...`) puts it beside %s", core, exe)
	}
	return fmt.Errorf("run %s: %w", core, err)
}
