// Command agentls-core is the whole of agentls: a language server that puts
// a coding agent inside any editor that speaks LSP, the same agent over the
// Agent Client Protocol, and the command line around them. With no
// arguments it serves LSP over stdio.
//
// Users start agentls (cmd/agentls), a small program beside it that runs
// `agentls tool` for the workspace's own tools and becomes this one for
// everything else; started by its own name, this program does everything,
// that command included.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// stdio is where a subcommand reads and writes. In serve mode stdout carries
// only the protocol; everything else goes to stderr.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// subcommand runs one verb of the command line.
type subcommand struct {
	summary string
	run     func(ctx context.Context, io stdio, args []string) error
}

// exitError carries an exit code other than 0 or 1 (e.g. 130 for cancelled).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

var subcommands = map[string]subcommand{
	"serve":      {"serve LSP over stdio (the default)", runServe},
	"acp":        {"serve the Agent Client Protocol over stdio (Zed, JetBrains, agent-shell)", runACP},
	"run":        {"run one agent task from the command line", runRun},
	"eval":       {"run the eval suite against the configured model and score it", runEval},
	"tool":       {"run one tool and print what the model would read", runTool},
	"fake-model": {"serve a scripted OpenAI-compatible model (for tests)", runFakeModel},
	"replay":     {"turn a flight recording into a fake-model script", runReplay},
	"stats":      {"print task statistics of a workspace", runStats},
	"undo":       {"revert every edit of one task (from the session store)", runUndo},
	"login":      {"store the model service's API key in the user's configuration folder", runLogin},
	"version":    {"print the version", runVersion},
	"help":       {"print this help", nil}, // set in init: it lists subcommands
}

func init() {
	subcommands["help"] = subcommand{"print this help", runHelp}
}

func main() {
	os.Exit(mainExit(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}

// mainExit runs the command line and returns the process exit code.
func mainExit(args []string, io stdio) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels (tasks end, writes drain); once it has
	// arrived, default handling is back, so a second one ends the process
	// even if something is stuck.
	go func() {
		<-ctx.Done()
		stop()
	}()

	name := "serve"
	if len(args) > 0 {
		name = args[0]
		args = args[1:]
	}
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "-v", "--version", "-version":
		name = "version"
	}
	sub, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(io.err, "agentls: unknown command %q\n\n", name)
		printUsage(io.err)
		return 2
	}
	err := sub.run(ctx, io, args)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(io.err, "agentls %s: %v\n", name, ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(io.err, "agentls %s: %v\n", name, err)
	return 1
}

func runVersion(_ context.Context, io stdio, _ []string) error {
	_, err := fmt.Fprintf(io.out, "agentls %s\n", version)
	return err
}

func runHelp(_ context.Context, io stdio, _ []string) error {
	printUsage(io.out)
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "agentls: a coding agent inside any editor that speaks LSP\n\nUsage:\n  agentls [command] [arguments]\n\nCommands:\n")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintf(w, "\n%s\nRun 'agentls COMMAND -h' for the flags of one command.\n", strings.TrimSpace(envHelp))
}

const envHelp = `
Environment:
  OPENAI_API_KEY   API key of the model service (never logged)
  OPENAI_BASE_URL  base URL of an OpenAI-compatible service (OpenAI, Ollama, vLLM, ...)
  AGENTLS_MODEL    model name (default gpt-4o-mini)

Files (in $XDG_CONFIG_HOME/agentls, else ~/.config/agentls):
  settings.json     your settings (any agentls setting), read by serve, acp, run and eval
  credentials.json  the key agentls login stored, used when the key's variable is empty
`
