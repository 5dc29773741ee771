package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/permission"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// Options configure a run of the suite.
type Options struct {
	// Suite holds tasks/*.txtar and fixtures/NAME.txtar (the suite built
	// into agentls is Builtin).
	Suite fs.FS
	// Settings are the user's settings, as `agentls run` builds them (the
	// environment, then flags): the model, its endpoint, prices, budgets.
	// Approval is set to auto (the suite's tasks run unattended, as
	// `agentls run --edit` does).
	Settings session.Settings
	// Getenv reads the API key; nil means os.Getenv.
	Getenv func(string) string
	// Scripted answers each task with its own scripted model (model.json)
	// instead of the configured one.
	Scripted bool
	// Parallel is how many tasks run at once (default 1).
	Parallel int
	// Repeat runs each task this many times (default 1): a real model
	// answers differently from run to run, and the share of runs solved is
	// the figure to trust. Runs after the first are named TASK#2, TASK#3...
	Repeat int
	// Only, when set, runs the tasks whose name it matches.
	Only *regexp.Regexp
	// Progress receives a line as each task starts and ends; nil: none.
	Progress io.Writer
	// Verbose adds a progress line per tool call.
	Verbose bool
	// Version names the agentls build in the report.
	Version string

	prog *progress // the run's progress lines, set by Run
}

// progressOf is the progress that takes a line per tool call, or nil.
func (o Options) progressOf() *progress {
	if o.Verbose && o.prog != nil && o.prog.w != nil {
		return o.prog
	}
	return nil
}

// Run runs the suite and scores every task. An error means the suite could
// not run (a missing fixture, a task file that does not parse); a task that
// fails is a result, not an error. When ctx ends first, Run returns the
// report of the tasks scored until then (Partial) with ctx's error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	suite, err := LoadSuite(opts.Suite)
	if err != nil {
		return nil, err
	}
	tasks := suite.Tasks
	if opts.Only != nil {
		var keep []Task
		for _, t := range tasks {
			if opts.Only.MatchString(t.Name) {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			return nil, fmt.Errorf("no task name matches %q", opts.Only)
		}
		tasks = keep
	}
	if opts.Repeat > 1 {
		var all []Task
		for _, t := range tasks {
			for n := 1; n <= opts.Repeat; n++ {
				c := t
				if n > 1 {
					c.Name = fmt.Sprintf("%s#%d", t.Name, n)
				}
				all = append(all, c)
			}
		}
		tasks = all
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	rep := &Report{
		Version: opts.Version, Model: opts.Settings.Model, BaseURL: session.RedactURL(opts.Settings.BaseURL),
		Scripted: opts.Scripted, Started: time.Now().UTC().Truncate(time.Second),
		Validate: opts.Settings.Validate, MaxTurns: opts.Settings.MaxTurns,
		Tasks: make([]TaskResult, len(tasks)),
	}
	if opts.Scripted {
		rep.Model, rep.BaseURL = scriptedModel, "a scripted model per task"
	}
	p := &progress{w: opts.Progress, total: len(tasks)}
	opts.prog = p
	start := time.Now()
	slots := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	done := make([]bool, len(tasks)) // scored before any cancel
	for i, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			p.started(t)
			r, err := runTask(ctx, opts, t, suite.Fixtures[t.Fixture])
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("task %s: %w", t.Name, err) })
				r = TaskResult{Name: t.Name, What: t.What, Kind: string(t.Kind), Fixture: t.Fixture, MinCalls: t.MinCalls,
					Failures: []string{"harness: " + err.Error()}}
			}
			if ctx.Err() != nil {
				return // cut short: neither solved nor failed
			}
			rep.Tasks[i], done[i] = r, true
			p.ended(r)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		// The tasks scored before the cancel are a report of their own.
		var kept []TaskResult
		for i, ok := range done {
			if ok {
				kept = append(kept, rep.Tasks[i])
			}
		}
		rep.Tasks, rep.Partial = kept, true
		rep.Summary = summarize(kept, time.Since(start))
		return rep, ctx.Err()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	rep.Summary = summarize(rep.Tasks, time.Since(start))
	return rep, nil
}

// scriptedModel is the model name of a scripted run.
const scriptedModel = "scripted"

// runTask runs one task in a fresh copy of its fixture and scores it.
func runTask(ctx context.Context, opts Options, t Task, fixture map[string][]byte) (TaskResult, error) {
	r := TaskResult{Name: t.Name, What: t.What, Kind: string(t.Kind), Fixture: t.Fixture, MinCalls: t.MinCalls}
	tmp, err := os.MkdirTemp("", "agentls-eval-"+t.Name+"-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	if err := writeFiles(ws, fixture); err != nil {
		return r, err
	}
	if err := writeFiles(ws, t.Overlay); err != nil {
		return r, err
	}
	settings := opts.Settings
	settings.Approval = "auto"
	check := checker(settings)

	// A check that passes before the task proves nothing about it.
	if t.Kind == agent.KindEdit && t.Check.Run != "" {
		pre := filepath.Join(tmp, "before")
		if err := copyTree(ws, pre); err != nil {
			return r, err
		}
		if err := writeFiles(pre, t.Hidden); err != nil {
			return r, err
		}
		ok, out, err := check(ctx, pre, t.Check.Run)
		if err != nil {
			return r, err
		}
		if ok {
			return r, fmt.Errorf("check %q passes before the task (the task is solved by doing nothing): %s", t.Check.Run, lastLines(out, 3))
		}
	}
	before, err := takeSnapshot(ws)
	if err != nil {
		return r, err
	}

	getenv := opts.Getenv
	if opts.Scripted {
		srv, err := fakemodel.Start(t.Script)
		if err != nil {
			return r, err
		}
		defer srv.Close()
		settings.BaseURL, settings.Model = srv.URL(), scriptedModel
		getenv = func(string) string { return "" } // a model on this machine needs no key
	}
	h := session.New(settings, session.Options{Getenv: getenv, DBPath: filepath.Join(tmp, "agentls.db"), DrainTimeout: 10 * time.Second})
	h.SetRoots([]string{ws})
	start := time.Now()
	task, err := h.Start(ctx, agent.TaskSpec{Kind: t.Kind, Prompt: t.Prompt}, port{name: t.Name, p: opts.progressOf()})
	if err != nil {
		h.Close()
		return r, err
	}
	out, err := task.Wait(ctx)
	r.Wall = Seconds(time.Since(start).Seconds())
	red := h.Redactor() // what the report holds never shows the key
	h.Close()
	if err != nil {
		return r, err
	}
	res := out.Result
	r.Status, r.StopReason = string(res.Status), string(res.StopReason)
	r.ModelCalls = res.ModelCalls
	for _, st := range res.Tools {
		r.ToolCalls += st.Calls
	}
	r.InputTokens, r.OutputTokens, r.CachedTokens = res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CachedTokens
	if out.CostKnown {
		c := out.Cost
		r.Cost = &c
	}
	r.Answer = clip(red.String(res.Answer), 600)
	for _, n := range res.Notes {
		r.Notes = append(r.Notes, clip(red.String(n), 300))
	}
	fails, err := score(ctx, t, ws, before, res, check)
	if err != nil {
		return r, err
	}
	for i := range fails {
		fails[i] = red.String(fails[i])
	}
	r.Failures = fails
	r.Solved = len(fails) == 0
	return r, nil
}

// checker runs check commands the way the agent's check command runs:
// through tools.Run, in the sandbox of the settings, without the API key
// in its environment.
func checker(s session.Settings) runCheck {
	return func(ctx context.Context, dir, command string) (bool, string, error) {
		c := agent.ShellCheck{Dir: dir, Command: command, Timeout: checkTimeout, Sandbox: s.Sandbox, SecretEnv: []string{s.APIKeyEnv}}
		return c.Check(ctx)
	}
}

// port is the suite's side of a task: edits on disk, every approval given
// (the settings' approval is auto), files that commonly hold secrets never
// read, and, with Options.Verbose, a progress line per tool call.
type port struct {
	session.Unsupported // no editor: nothing to save, no diagnostics

	name string
	p    *progress // nil: no lines per call
}

func (port) Editor(*workspace.Workspace) workspace.Editor { return nil }
func (pt port) Event(e agent.Event) {
	if pt.p != nil && e.Kind == agent.EventToolFinished {
		pt.p.call(pt.name, e)
	}
}
func (port) AskUser(_ context.Context, q permission.Request) (tools.Decision, error) {
	if q.Secret {
		return tools.Deny, nil
	}
	return tools.AllowOnce, nil
}

// call writes a line for a tool call of task name.
func (p *progress) call(name string, e agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	mark := "ok"
	if e.IsError {
		mark = "error"
	}
	fmt.Fprintf(p.w, "eval:   %-28s %s %s (%s, %s)\n", name, e.Tool, e.Args, mark, e.Duration.Round(time.Millisecond))
}

// progress writes a line to w as each task starts and ends.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	done  int
}

func (p *progress) started(t Task) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "eval: %-28s %-5s %-3s started\n", t.Name, t.Kind, t.Fixture)
}

func (p *progress) ended(r TaskResult) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	verdict := "solved"
	if !r.Solved {
		verdict = "UNSOLVED"
		if len(r.Failures) > 0 {
			verdict += ": " + r.Failures[0]
		}
	}
	fmt.Fprintf(p.w, "eval: [%d/%d] %-28s %d call(s) %5.1fs  %s\n", p.done, p.total, r.Name, r.ModelCalls, float64(r.Wall), verdict)
}

// errNoTasks is returned by Compare for reports without tasks.
var errNoTasks = errors.New("no tasks in the report")

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
