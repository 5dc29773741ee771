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
	"text/tabwriter"
	"time"

	"github.com/agentls/agentls/agent/session"
)

// runStats prints the task statistics of a workspace from its session
// database: they survive restarts because they are computed from it.
func runStats(ctx context.Context, sio stdio, args []string) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	fs.SetOutput(sio.err)
	ws := fs.String("workspace", "", "workspace root `DIR` (default: the current directory)")
	dbPath := fs.String("db", "", "session database `FILE` (default: DIR/.agentls/agentls.db)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	since := fs.Duration("since", 0, "only tasks created in the last `DURATION` (e.g. 24h)")
	top := fs.Int("top", 10, "how many tools to list")
	fs.Usage = func() {
		fmt.Fprintln(sio.err, "usage: agentls stats [--workspace DIR] [--json] [--since 24h]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return &exitError{code: 2, err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	root := *ws
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		root = wd
	}
	path := *dbPath
	if path == "" {
		path = session.DefaultDBPath(root)
	}
	var from time.Time
	if *since > 0 {
		from = time.Now().Add(-*since)
	}

	st := &session.Stats{Since: from, MostUsedTools: []session.ToolStat{}, SlowestTools: []session.ToolStat{}}
	if _, err := os.Stat(path); err == nil {
		h := session.New(session.Defaults(), session.Options{DBPath: path, DrainTimeout: 10 * time.Second})
		h.SetRoots([]string{root})
		st, err = h.Stats(ctx, from, *top)
		h.Close()
		if err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(sio.out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return printStats(sio.out, st, filepath.Clean(path))
}

func printStats(w io.Writer, st *session.Stats, path string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Database\t%s\n", path)
	if !st.Since.IsZero() {
		fmt.Fprintf(tw, "Since\t%s\n", st.Since.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "Tasks\t%d (%d completed, %d failed, %d cancelled, %d live or interrupted)\n",
		st.Tasks, st.Completed, st.Failed, st.Cancelled, st.Live)
	fmt.Fprintf(tw, "Completion rate\t%.1f%% of ended tasks\n", 100*st.CompletionRate)
	fmt.Fprintf(tw, "Model calls\t%d (%.1f per task)\n", st.ModelCalls, st.CallsPerTask)
	fmt.Fprintf(tw, "Tokens\t%d in (%d cached), %d out (%.0f per task)\n", st.InputTokens, st.CachedTokens, st.OutputTokens, st.TokensPerTask)
	fmt.Fprintf(tw, "Time\t%s in the model, %s in tools\n", st.ModelTime, st.ToolTime)
	fmt.Fprintf(tw, "Tool calls\t%d\n", st.ToolCalls)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sec := range []struct {
		title string
		rows  []session.ToolStat
	}{{"Most used tools", st.MostUsedTools}, {"Slowest tools (by p95)", st.SlowestTools}} {
		if len(sec.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", sec.title)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "tool\tcalls\terrors\tmedian\tp95\tmax\t\n")
		for _, t := range sec.rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t\n", t.Name, t.Calls, t.Errors, t.Median, t.P95, t.Max)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
