package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
)

// runUndo reverts every edit of one task on disk, from the session store:
// exit 0 when every file is reverted (or already was), 1 when a file the
// user changed since the task had to be left alone (its diff is printed).
func runUndo(ctx context.Context, sio stdio, args []string) error {
	fset := flag.NewFlagSet("undo", flag.ContinueOnError)
	fset.SetOutput(sio.err)
	dir := fset.String("workspace", ".", "workspace `DIR`")
	dbPath := fset.String("db", "", "session database `FILE` (default WORKSPACE/.agentls/agentls.db)")
	asJSON := fset.Bool("json", false, "print the report as JSON")
	fset.Usage = func() {
		fmt.Fprintln(sio.err, "Usage: agentls undo [--workspace DIR] [--json] TASK_ID")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return &exitError{code: 2, err: errors.New("want one task ID")}
	}
	id := fset.Arg(0)
	if err := agent.CheckTaskID(id); err != nil {
		return &exitError{code: 2, err: err}
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	path := *dbPath
	if path == "" {
		path = session.DefaultDBPath(root)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no session database at %s", path)
	}
	h := session.New(session.Defaults(), session.Options{DBPath: path, DrainTimeout: 10 * time.Second})
	h.SetRoots([]string{root})
	defer h.Close()
	task, err := h.Result(ctx, id)
	if err != nil && !errors.Is(err, session.ErrRunning) {
		return err
	}
	if task != nil && task.Status == "interrupted" {
		fmt.Fprintf(sio.err, "agentls undo: task %s was interrupted (%s); undoing what it did so far\n", id, task.State)
	}
	rep, err := h.Undo(ctx, id, nil) // nil: on disk
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(sio.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printUndo(sio, rep)
	}
	if len(rep.NotReverted) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d file(s) not reverted: they changed since the task", len(rep.NotReverted))}
	}
	return nil
}

func printUndo(sio stdio, rep *session.UndoReport) {
	var b strings.Builder
	for _, f := range rep.Reverted {
		verb := "reverted"
		switch {
		case f.Action == session.RevertDelete:
			verb = "deleted (the task created it)"
		case f.Merged:
			verb = "reverted around your later changes"
		}
		fmt.Fprintf(&b, "%s: %s\n", f.Path, verb)
	}
	for _, f := range rep.Unchanged {
		fmt.Fprintf(&b, "%s: unchanged (%s)\n", f.Path, f.Reason)
	}
	for _, f := range rep.NotReverted {
		fmt.Fprintf(&b, "%s: NOT reverted: %s\n", f.Path, f.Reason)
		if f.Diff != "" {
			fmt.Fprintf(&b, "the revert that was not applied:\n%s", f.Diff)
		}
		if f.UserDiff != "" {
			fmt.Fprintf(&b, "the change since the task:\n%s", f.UserDiff)
		}
	}
	if b.Len() == 0 {
		b.WriteString("the task changed no file\n")
	}
	fmt.Fprint(sio.out, b.String())
}
