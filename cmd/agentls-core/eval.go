package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/agentls/agentls/agent/session"
	agentsettings "github.com/agentls/agentls/agent/settings"
	"github.com/agentls/agentls/eval"
)

// runEval runs the eval suite against the model the environment and flags
// configure (the same settings as `agentls run`), or, with --scripted,
// against each task's scripted model; or compares two reports. The table
// goes to stdout, progress to stderr. Exit 0 when every task is solved
// (with --scripted: also at its minimum calls), 1 otherwise.
func runEval(ctx context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(io.err)
	loaded := agentsettings.Load(agentsettings.Options{})
	for _, p := range loaded.Problems {
		fmt.Fprintf(io.err, "agentls eval: %s\n", p)
	}
	settings := loaded.User.Settings
	scripted := fs.Bool("scripted", false, "answer each task with its scripted model (tests the harness; no model service)")
	out := fs.String("out", "", "write the report as JSON to `FILE`")
	compare := fs.Bool("compare", false, "compare two reports: agentls eval --compare OLD.json NEW.json")
	suiteDir := fs.String("suite", "", "run the suite in `DIR` (tasks/*.txtar, fixtures/*.txtar) instead of the built-in one")
	only := fs.String("run", "", "run only the tasks whose name matches `REGEXP`")
	parallel := fs.Int("parallel", 1, "tasks run at `N` at once")
	verbose := fs.Bool("v", false, "a progress line per tool call, too")
	list := fs.Bool("list", false, "list the suite's tasks and exit")
	repeat := fs.Int("repeat", 1, "run each task `N` times (TASK#2, ...): a real model's answers vary")
	fs.StringVar(&settings.Validate, "validate", settings.Validate, "validator model call: off, on or edits")
	fs.IntVar(&settings.MaxTurns, "max-turns", settings.MaxTurns, "model calls per task")
	maxTime := fs.Duration("max-time", 10*time.Minute, "wall time per task")
	fs.StringVar(&settings.APIKeyEnv, "api-key-env", settings.APIKeyEnv, "environment `VARIABLE` that holds the API key")
	completionEval := fs.Bool("completion", false, "run the completion eval instead: holes cut from the fixtures, completed by inline completion (the completion setting's model), scored by exact and prefix match")
	settingsJSON := fs.String("settings", "", "settings `JSON` as for agentls run, e.g. '{\"prices\": {\"gpt-4.1-mini\": {\"input\": 0.4, \"output\": 1.6, \"cached\": 0.1}}}'")
	fs.Usage = func() {
		fmt.Fprintf(io.err, "Usage: agentls eval [--scripted] [--out FILE.json] [--run REGEXP] [--repeat N] [--parallel N] [-v]\n       agentls eval --completion [--scripted] [--out FILE.json] [--run REGEXP]\n       agentls eval --compare OLD.json NEW.json\n       agentls eval --list\n\n")
		fs.PrintDefaults()
		fmt.Fprint(io.err, envHelp)
	}
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if *compare {
		if fs.NArg() != 2 {
			fs.Usage()
			return &exitError{code: 2, err: errors.New("--compare takes two report files")}
		}
		old, err := eval.ReadReport(fs.Arg(0))
		if err != nil {
			return err
		}
		cur, err := eval.ReadReport(fs.Arg(1))
		if err != nil {
			return err
		}
		return eval.Compare(io.out, old, cur)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	settings.MaxTime = session.Duration(*maxTime)
	settings.Recordings = false
	if *settingsJSON != "" {
		var bad []session.Problem
		settings, bad = settings.Apply(json.RawMessage(*settingsJSON))
		if len(bad) > 0 {
			var msgs []string
			for _, p := range bad {
				msgs = append(msgs, p.String())
			}
			return &exitError{code: 2, err: errors.New(strings.Join(msgs, "; "))}
		}
	}
	if bad := settings.Check(); len(bad) > 0 {
		return &exitError{code: 2, err: errors.New(bad[0].String())}
	}
	opts := eval.Options{Suite: eval.Builtin(), Settings: settings, Scripted: *scripted, Parallel: *parallel, Repeat: *repeat,
		Progress: io.err, Verbose: *verbose, Version: version, Getenv: loaded.Getenv}
	if *suiteDir != "" {
		opts.Suite = os.DirFS(*suiteDir)
		if _, err := fsStat(opts.Suite); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--suite %s: %w", *suiteDir, err)}
		}
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--run: %w", err)}
		}
		opts.Only = re
	}
	if *list {
		suite, err := eval.LoadSuite(opts.Suite)
		if err != nil {
			return err
		}
		for _, t := range suite.Tasks {
			if opts.Only == nil || opts.Only.MatchString(t.Name) {
				fmt.Fprintf(io.out, "%-26s %-4s %-3s %-9s %s\n", t.Name, t.Kind, t.Fixture, t.What, t.Prompt)
			}
		}
		return nil
	}
	if !*scripted && settings.APIKey(loaded.Getenv) == "" && !session.IsLoopback(settings.BaseURL) {
		return &exitError{code: 2, err: &session.ErrNoAPIKey{Env: settings.APIKeyEnv}}
	}
	if *completionEval {
		return runCompletionEval(ctx, io, eval.CompletionOptions{Suite: opts.Suite, Settings: settings, Getenv: loaded.Getenv,
			Scripted: *scripted, Only: opts.Only, Progress: io.err}, *out)
	}
	protect(io)
	rep, err := eval.Run(ctx, opts)
	if rep != nil && rep.Partial && len(rep.Tasks) > 0 {
		// Interrupted: what was scored is still worth keeping.
		rep.WriteTable(io.out)
		if *out != "" && rep.WriteJSON(*out) == nil {
			fmt.Fprintf(io.err, "eval: partial report written to %s\n", *out)
		}
		return &exitError{code: 130, err: err}
	}
	if err != nil {
		return err
	}
	if err := rep.WriteTable(io.out); err != nil {
		return err
	}
	if *out != "" {
		if err := rep.WriteJSON(*out); err != nil {
			return err
		}
		fmt.Fprintf(io.err, "eval: report written to %s\n", *out)
	}
	s := rep.Summary
	switch {
	case s.Solved < s.Tasks:
		return &exitError{code: 1, err: fmt.Errorf("%d of %d tasks unsolved", s.Tasks-s.Solved, s.Tasks)}
	case *scripted && s.AtMinCalls < s.Tasks:
		return &exitError{code: 1, err: fmt.Errorf("%d of %d scripted tasks took more than their minimum calls", s.Tasks-s.AtMinCalls, s.Tasks)}
	}
	return nil
}

// runCompletionEval runs the completion eval and writes its table (and
// report). Exit 1 when a hole failed, or, scripted, when the scores are
// not those the script makes.
func runCompletionEval(ctx context.Context, io stdio, opts eval.CompletionOptions, out string) error {
	rep, err := eval.RunCompletion(ctx, opts)
	if err != nil {
		return err
	}
	if err := rep.WriteTable(io.out); err != nil {
		return err
	}
	if out != "" {
		if err := rep.WriteJSON(out); err != nil {
			return err
		}
		fmt.Fprintf(io.err, "eval: report written to %s\n", out)
	}
	switch {
	case rep.Failed > 0:
		return &exitError{code: 1, err: fmt.Errorf("%d of %d completions failed", rep.Failed, rep.Holes)}
	case opts.Scripted && (rep.Exact != rep.WantExact || rep.Prefix != rep.WantPrefix):
		return &exitError{code: 1, err: fmt.Errorf("scripted completion scores exact %d prefix %d; the script makes exact %d prefix %d", rep.Exact, rep.Prefix, rep.WantExact, rep.WantPrefix)}
	}
	return nil
}

// fsStat checks a suite folder has a tasks folder.
func fsStat(fsys fs.FS) (fs.FileInfo, error) { return fs.Stat(fsys, "tasks") }
