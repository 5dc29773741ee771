package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// runRun runs one agent task: progress on stderr, the result on stdout,
// exit 0 completed, 1 failed, 130 cancelled.
func runRun(ctx context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.err)
	dir := fs.String("workspace", ".", "workspace `DIR`")
	edit := fs.Bool("edit", false, "let the agent change files and run commands (an edit task); default is a read-only question")
	validate := fs.String("validate", "edits", "validator model call: off, on or edits")
	check := fs.String("check", "", "check `COMMAND` run after edits, e.g. 'go build ./...'")
	maxTurns := fs.Int("max-turns", 30, "model calls per task")
	maxTime := fs.Duration("max-time", 15*time.Minute, "wall time per task")
	window := fs.Int("context-window", 0, "context window in tokens (0: known from the model name, else 128000)")
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
	switch agent.ValidateMode(*validate) {
	case agent.ValidateOff, agent.ValidateOn, agent.ValidateEdits:
	default:
		return &exitError{code: 2, err: fmt.Errorf("--validate %q: want off, on or edits", *validate)}
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	mcfg := llm.Config{
		BaseURL: os.Getenv("OPENAI_BASE_URL"),
		APIKey:  os.Getenv("OPENAI_API_KEY"),
		Model:   os.Getenv("AGENTLS_MODEL"),
	}
	client, err := llm.New(mcfg)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	ws, err := workspace.New(ctx, workspace.Options{Roots: []string{root}})
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer ws.Close()
	if *dbPath == "" {
		*dbPath = store.DefaultPath(root)
	}
	st, err := store.Open(ctx, *dbPath, store.Options{Secrets: func() []string { return []string{mcfg.APIKey} }})
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	defer func() {
		// Drain every pending write before exit (L27), even after Ctrl+C.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := st.Close(cctx); err != nil {
			fmt.Fprintf(io.err, "agentls run: session store: %v\n", err)
		}
	}()
	cfg := agent.Config{
		Root: root, ModelName: mcfg.Model, ContextWindow: *window,
		MaxTurns: *maxTurns, MaxTime: *maxTime,
		Validate: agent.ValidateMode(*validate),
		Store:    st, Files: ws, NoRecord: *noRecord,
	}
	if *check != "" {
		cfg.Check = agent.ShellCheck{Dir: root, Command: *check}
	}
	runner := agent.NewRunner(cfg, client, func(g *agent.Guard) []tools.Tool {
		// --edit is the user's consent to writes and commands: no approver.
		reg := tools.New(tools.Env{
			Workspace: ws,
			Editor:    g.Editor(ws, ws.DiskEditor()),
			SecretEnv: []string{"OPENAI_API_KEY"},
		})
		g.OnDone(func() { reg.Close() })
		return reg.Tools()
	})
	kind := agent.KindAsk
	if *edit {
		kind = agent.KindEdit
	}
	var task *agent.Task
	if *resume != "" {
		task, err = runner.Resume(ctx, *resume, &progress{w: io.err})
	} else {
		task, err = runner.Start(ctx, agent.TaskSpec{Kind: kind, Prompt: prompt}, &progress{w: io.err})
	}
	if err != nil {
		return err
	}
	<-task.Done()
	res := task.Result()
	if *jsonOut {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if err := printResult(io.out, res); err != nil {
		return err
	}
	fmt.Fprintln(io.err, summaryLine(res))
	if path, err := writeReport(ws.StateDir(), res, mcfg.APIKey); err != nil {
		fmt.Fprintf(io.err, "agentls run: report not written: %v\n", err)
	} else {
		fmt.Fprintf(io.err, "report: %s\n", path)
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

// writeReport writes the task's markdown report to <state>/tasks/ID.md;
// its secrets are kept out of it (llm.Redact).
func writeReport(stateDir string, res *agent.Result, secrets ...string) (string, error) {
	dir := filepath.Join(stateDir, "tasks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	path := filepath.Join(dir, res.TaskID+".md")
	if err := os.WriteFile(path, []byte(llm.Redact(res.Report(), secrets...)), 0o644); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, nil
}

// progress prints a task's events to the terminal, one line each.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progress) Event(e agent.Event) {
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
			fmt.Fprintf(p.w, "  %s %s\n", it.Status.Mark(), it.Text)
		}
	case agent.EventRetry:
		fmt.Fprintf(p.w, "! model call failed (%s), retrying in %s\n", e.Retry.Err, e.Retry.Wait.Round(time.Millisecond))
	case agent.EventNote:
		fmt.Fprintf(p.w, "! %s\n", firstLineOf(e.Text))
	}
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
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

// summaryLine gives the task's figures in one line (L22).
func summaryLine(r *agent.Result) string {
	var tl []string
	for name, st := range r.Tools {
		tl = append(tl, fmt.Sprintf("%s×%d %s", name, st.Calls, st.Duration.Round(time.Millisecond)))
	}
	sort.Strings(tl)
	return fmt.Sprintf("%s (%s): %d model calls, tokens in %d / out %d / cached %d, model %s, tools %s [%s], %s",
		r.Status, r.StopReason, r.ModelCalls, r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CachedTokens,
		r.ModelTime.Round(time.Millisecond), r.ToolTime.Round(time.Millisecond), strings.Join(tl, ", "), r.Duration.Round(time.Millisecond))
}
