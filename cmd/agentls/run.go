package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
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
		fmt.Fprintf(io.err, "Usage: agentls run [--workspace DIR] [--edit] \"PROMPT\"\n       agentls run [--workspace DIR] --resume ID\n\n")
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
	// --edit is the user's consent to writes and commands; without it the
	// task is read-only and asks nothing.
	settings.Approval = "auto"
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
	protect(io)
	h := session.New(settings, session.Options{Getenv: loaded.Getenv, DBPath: *dbPath, DrainTimeout: 10 * time.Second, LanguageServers: langserver.NewServers()})
	h.SetRoots([]string{root})
	// Close drains every pending write before exit, even after Ctrl+C.
	defer h.Close()
	// What the task prints (events, the answer, diffs, the summary) passes
	// the host's redactor, as every other face's output does.
	io.out, io.err = redactingWriter{w: io.out, r: h.Redactor}, redactingWriter{w: io.err, r: h.Redactor}

	port := &terminalPort{w: io.err}
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

// terminalPort is the command line's side of a task: events as lines on
// stderr, edits on disk, and no questions (the --edit flag is the consent
// to writes and commands; a file that commonly holds secrets is read only
// when --settings '{"allowSecretReads": [...]}' names it).
type terminalPort struct {
	session.Unsupported // no editor: nothing to save, no diagnostics

	mu sync.Mutex
	w  io.Writer
}

func (p *terminalPort) Editor(*workspace.Workspace) workspace.Editor { return nil }

func (p *terminalPort) Ask(_ context.Context, q session.Question) (tools.Decision, error) {
	if q.Request.Secret {
		p.mu.Lock()
		fmt.Fprintf(p.w, "! not read: %s commonly holds secrets; to let tasks read it, run with --settings '{\"allowSecretReads\": [%q]}'\n", q.Request.Path, q.Request.Path)
		p.mu.Unlock()
		return tools.Deny, nil
	}
	return tools.AllowOnce, nil
}

func (p *terminalPort) Event(e agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case agent.EventState:
		fmt.Fprintf(p.w, "· %s\n", e.State)
	case agent.EventToolStarted:
		fmt.Fprintf(p.w, "→ %s %s\n", e.Tool, e.Args)
	case agent.EventToolFinished:
		mark := "✓"
		if e.IsError {
			mark = "✗"
		}
		fmt.Fprintf(p.w, "%s %s (%s) %s\n", mark, e.Tool, e.Duration.Round(time.Millisecond), e.Text)
	case agent.EventPlan:
		fmt.Fprintln(p.w, "plan:")
		for _, it := range e.Plan.Items {
			fmt.Fprintf(p.w, "  %s\n", session.PlanLine(it))
		}
	case agent.EventRetry:
		fmt.Fprintf(p.w, "! model call failed (%s), retrying in %s\n", e.Retry.Err, e.Retry.Wait.Round(time.Millisecond))
	case agent.EventNote:
		fmt.Fprintf(p.w, "! %s\n", session.FirstLine(e.Text, 200))
	}
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
