package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/agent/session"
	agentsettings "github.com/agentls/agentls/agent/settings"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// runRun runs one agent task on the same session host as the editor faces:
// flags -> session.Settings -> Host.Start with a terminal port. Progress
// goes to stderr, the result to stdout; exit 0 completed, 1 failed, 130
// cancelled.
func runRun(ctx context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.err)
	loaded := agentsettings.Load(agentsettings.Options{})
	for _, p := range loaded.Problems {
		fmt.Fprintf(io.err, "agentls run: %s\n", p)
	}
	settings := loaded.User.Settings
	dir := fs.String("workspace", ".", "workspace `DIR`")
	edit := fs.Bool("edit", false, "let the agent change files and run commands (an edit task); default is a read-only question")
	yes := fs.Bool("yes", false, "answer yes to every tool call and review question (approval \"auto\"); without it, and without a terminal to ask on, they are refused")
	fs.StringVar(&settings.Validate, "validate", settings.Validate, "validator model call: off, on or edits")
	fs.StringVar(&settings.CheckCommand, "check", "", "check `COMMAND` run after edits, e.g. 'go build ./...'")
	fs.IntVar(&settings.MaxTurns, "max-turns", settings.MaxTurns, "model calls per task")
	fs.IntVar(&settings.MaxTokens, "max-tokens", 0, "input+output tokens per task (0: no limit)")
	maxTime := fs.Duration("max-time", 15*time.Minute, "wall time per task")
	fs.IntVar(&settings.ContextWindow, "context-window", 0, "context window in tokens (0: known from the model name, else 128000)")
	fs.StringVar(&settings.APIKeyEnv, "api-key-env", settings.APIKeyEnv, "environment `VARIABLE` that holds the API key")
	extraBody := fs.String("extra-body", "", "JSON `OBJECT` merged into every model request body")
	azure := fs.String("azure", "", "Azure OpenAI as `{\"apiVersion\":...,\"deployment\":...}`")
	settingsJSON := fs.String("settings", "", "editor-style settings `JSON` applied on top of the flags' defaults (the same names as the agentls section)")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	resume := fs.String("resume", "", "resume the interrupted task `ID` from the session store instead of starting one")
	dbPath := fs.String("db", "", "session database `FILE` (default WORKSPACE/.agentls/agentls.db)")
	noRecord := fs.Bool("no-record", false, "do not write the flight recording (.agentls/recordings/ID.jsonl)")
	fs.Usage = func() {
		fmt.Fprintf(io.err, "Usage: agentls run [--workspace DIR] [--edit] [--yes] \"PROMPT\"\n       agentls run [--workspace DIR] --resume ID\n\n")
		fmt.Fprint(io.err, runAskHelp)
		fs.PrintDefaults()
		fmt.Fprint(io.err, envHelp)
	}
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if prompt == "" && *resume == "" {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("no prompt")}
	}
	settings.MaxTime = session.Duration(*maxTime)
	settings.Recordings = !*noRecord
	if *yes {
		// The user's yes, given up front, to every tool call.
		settings.Approval = "auto"
	}
	var raw = map[string]json.RawMessage{}
	if *extraBody != "" {
		raw["extraBody"] = json.RawMessage(*extraBody)
	}
	if *azure != "" {
		raw["azure"] = json.RawMessage(*azure)
	}
	var bad []session.Problem
	if len(raw) > 0 {
		b, _ := json.Marshal(raw)
		settings, bad = settings.Apply(b)
	}
	if *settingsJSON != "" {
		var more []session.Problem
		settings, more = settings.Apply([]byte(*settingsJSON))
		bad = append(bad, more...)
	}
	bad = append(bad, settings.Check()...)
	if len(bad) > 0 {
		var msgs []string
		for _, p := range bad {
			msgs = append(msgs, p.String())
		}
		return &exitError{code: 2, err: errors.New(strings.Join(msgs, "; "))}
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	// Asked on the terminal when both ends of the conversation are one
	// (the question on stderr, the answer from stdin).
	tty := isTerminal(io.in) && isTerminal(io.err)
	protect(io)
	h := session.New(settings, session.Options{Getenv: loaded.Getenv, DBPath: *dbPath, DrainTimeout: 10 * time.Second, LanguageServers: langserver.NewServers()})
	h.SetRoots([]string{root})
	// Close drains every pending write before exit, even after Ctrl+C.
	defer h.Close()
	// What the task prints (events, the answer, diffs, the summary) passes
	// the host's redactor, as every other face's output does.
	io.out, io.err = redactingWriter{w: io.out, r: h.Redactor}, redactingWriter{w: io.err, r: h.Redactor}

	port := &terminalPort{w: io.err, yes: *yes}
	if tty {
		port.in = bufio.NewReader(io.in)
	}
	var t *session.Task
	if *resume != "" {
		t, err = h.Resume(ctx, *resume, port)
	} else {
		kind := agent.KindAsk
		if *edit {
			kind = agent.KindEdit
		}
		t, err = h.Start(ctx, agent.TaskSpec{Kind: kind, Prompt: prompt}, port)
	}
	if err != nil {
		return err
	}
	out, err := t.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	res := out.Result
	if *jsonOut {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if err := printResult(io.out, res); err != nil {
		return err
	}
	fmt.Fprintf(io.err, "%s: %s\n", res.Status, out.Summary)
	if out.Report != "" {
		fmt.Fprintf(io.err, "report: %s\n", out.Report)
	}
	switch res.Status {
	case agent.StateCompleted:
		return nil
	case agent.StateCancelled:
		return &exitError{code: 130}
	default:
		return &exitError{code: 1, err: fmt.Errorf("task failed (%s): %s", res.StopReason, res.Error)}
	}
}

// runAskHelp is what `agentls run -h` says about questions.
const runAskHelp = `Questions: an edit task asks before it runs a command or writes a file
(under the approval setting "ask", the default), as an editor does. On a
terminal the question, with the exact command or the diff to be written,
is printed on stderr and answered from stdin. Without a terminal nothing
can be asked, so everything that would ask is refused, unless --yes or
--settings '{"approval":"auto"}' allows it. A file that commonly holds
secrets, a workspace .mcp.json and a settings change are never allowed by
--yes: answer them on a terminal, or name the file in allowSecretReads.

`

// terminalPort is the command line's side of a task: events as lines on
// stderr, edits on disk, and questions on the terminal when there is one
// (in): the request rendered whole on stderr, the answer read from in.
// Without a terminal every question is refused and the user told how to
// allow it; --yes (yes) keeps review questions.
type terminalPort struct {
	session.Unsupported // no editor: nothing to save, no diagnostics

	mu    sync.Mutex // guards w
	w     io.Writer
	askMu sync.Mutex    // one question at a time (guards in, lines)
	in    *bufio.Reader // the terminal; nil: none
	lines chan line     // in's lines, read ahead of a question's wait
	yes   bool
}

// line is one line the terminal read, or why none came.
type line struct {
	text string
	err  error
}

// readLine waits for the user's next line, or for ctx (Ctrl+C cancels the
// task while a question waits).
func (p *terminalPort) readLine(ctx context.Context) (string, error) {
	if p.lines == nil {
		p.lines = make(chan line)
		go func() {
			for {
				s, err := p.in.ReadString('\n')
				p.lines <- line{s, err}
				if err != nil {
					close(p.lines)
					return
				}
			}
		}()
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case l, ok := <-p.lines:
		if !ok {
			return "", io.EOF
		}
		if l.err != nil && l.text == "" {
			return "", l.err
		}
		return l.text, nil
	}
}

// print writes s whole, between events.
func (p *terminalPort) print(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, s)
}

func (p *terminalPort) Editor(*workspace.Workspace) workspace.Editor { return nil }

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// AskUser implements session.Port.
func (p *terminalPort) AskUser(ctx context.Context, q permission.Request) (tools.Decision, error) {
	p.askMu.Lock()
	defer p.askMu.Unlock()
	if p.in == nil {
		switch {
		case p.yes && q.Kind == permission.KindReview:
			return tools.AllowOnce, nil
		case q.Secret:
			p.print(fmt.Sprintf("! not read: %s commonly holds secrets; to let tasks read it, run on a terminal and answer, or with --settings '{\"allowSecretReads\": [%q]}'\n", q.Path(), q.Path()))
		case q.Kind == permission.KindTool || q.Kind == permission.KindReview:
			p.print(fmt.Sprintf("! refused: %s (no terminal to ask on; run on a terminal, or pass --yes)\n", q.Title))
		default:
			p.print(fmt.Sprintf("! refused: %s (no terminal to ask on)\n", q.Title))
		}
		return tools.Deny, nil
	}
	p.print(renderQuestion(q))
	for {
		text, err := p.readLine(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return tools.Deny, ctx.Err()
			}
			return tools.Deny, fmt.Errorf("no answer on the terminal: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "y", "yes":
			return tools.AllowOnce, nil
		case "t":
			if q.Kind == permission.KindTool {
				return tools.AllowForTask, nil
			}
		case "a":
			if q.Always != "" {
				return tools.AllowAlways, nil
			}
		case "n", "no", "":
			return tools.Deny, nil
		case "r":
			if q.Kind == permission.KindTool {
				return tools.DenyAlways, nil
			}
		}
		p.print("answer " + choices(q) + ": ")
	}
}

// renderQuestion is a question as the terminal shows it: the title, the
// exact command, the diff of every file of the preview, then the choices.
func renderQuestion(q permission.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n? agentls wants to %s\n", q.Title)
	if q.Command != "" {
		fmt.Fprintf(&b, "  $ %s\n", q.Command)
	}
	for _, f := range q.Preview {
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", f.Path, f.Path)
		for _, h := range workspace.DiffHunks(f.Before, f.After) {
			b.WriteString(h.Diff(f.Before))
		}
	}
	fmt.Fprintf(&b, "%s: ", choices(q))
	return b.String()
}

// choices are the answers a question takes.
func choices(q permission.Request) string {
	c := []string{"[y]es once"}
	if q.Kind == permission.KindTool {
		c = append(c, "[t] for this task")
	}
	if q.Always != "" {
		c = append(c, "[a]lways allow `"+q.Always+"`")
	}
	c = append(c, "[n]o")
	if q.Kind == permission.KindTool {
		c = append(c, "[r]eject always in this session")
	}
	return strings.Join(c, ", ")
}

func (p *terminalPort) Event(e agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case agent.EventState:
		fmt.Fprintf(p.w, "· %s\n", e.State)
	case agent.EventToolStarted:
		fmt.Fprintf(p.w, "→ %s\n", callTitle(e))
	case agent.EventToolFinished:
		mark, said := "✓", e.Text
		if e.IsError {
			mark = "✗"
		} else if e.Present != nil && e.Present.Outcome != "" {
			said = e.Present.Outcome
		}
		fmt.Fprintf(p.w, "%s %s (%s) %s\n", mark, callTitle(e), e.Duration.Round(time.Millisecond), oneLine(said))
	case agent.EventPlan:
		fmt.Fprintln(p.w, "plan:")
		for _, it := range e.Plan.Items {
			fmt.Fprintf(p.w, "  %s\n", session.PlanLine(it))
		}
	case agent.EventRetry:
		fmt.Fprintf(p.w, "! model call failed (%s), retrying in %s\n", e.Retry.Err, e.Retry.Wait.Round(time.Millisecond))
	case agent.EventNote:
		if e.Problem {
			// A failure of the user's own programs: whole, with the end of
			// the program's stderr (bounded where it is kept).
			fmt.Fprintf(p.w, "! %s\n", strings.ReplaceAll(strings.TrimRight(e.Text, "\n"), "\n", "\n  "))
			return
		}
		fmt.Fprintf(p.w, "! %s\n", session.FirstLine(e.Text, 200))
	}
}

// callTitle is the one line that names a tool call, as its tool describes
// it ("Read go.mod", "Run `go test ./...`"); the tool's name and arguments
// for a call without a description.
func callTitle(e agent.Event) string {
	if e.Present != nil && e.Present.Title != "" {
		return oneLine(e.Present.Title)
	}
	return oneLine(e.Tool + " " + e.Args)
}

// oneLine is the first line of s, cut to 200 runes.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}

// printResult writes the answer and the diff of every changed file.
func printResult(w io.Writer, r *agent.Result) error {
	var b strings.Builder
	if r.Answer != "" {
		b.WriteString(strings.TrimSpace(r.Answer) + "\n")
	}
	for _, f := range r.Files {
		if f.Diff == "" {
			fmt.Fprintf(&b, "\nchanged: %s\n", f.Path)
			continue
		}
		b.WriteString("\n" + f.Diff)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// redactingWriter hides the secrets r knows in every write to w. The
// writers of a task print whole lines, so a secret is never cut in two.
type redactingWriter struct {
	w io.Writer
	r func() redact.Redactor
}

func (rw redactingWriter) Write(p []byte) (int, error) {
	if _, err := rw.w.Write([]byte(rw.r().String(string(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}
