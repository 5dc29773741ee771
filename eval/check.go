package eval

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/bmatcuk/doublestar/v4"
)

// checkTimeout bounds one run of a task's check command.
const checkTimeout = 3 * time.Minute

// compile checks the regular expressions and globs of c.
func (c Check) compile() error {
	var all []string
	all = append(all, c.Answer...)
	all = append(all, c.NotAnswer...)
	all = append(all, c.NoCommand...)
	for _, v := range c.Contains {
		all = append(all, v...)
	}
	for _, v := range c.Absent {
		all = append(all, v...)
	}
	for _, re := range all {
		if _, err := regexp.Compile("(?i)" + re); err != nil {
			return err
		}
	}
	for _, g := range append(slices.Clone(c.Unchanged), keys(c.Absent)...) {
		if !doublestar.ValidatePattern(g) {
			return fmt.Errorf("bad glob %q", g)
		}
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func match(re, s string) bool { return regexp.MustCompile("(?i)" + re).MatchString(s) }

// snapshot is the content of every file of a workspace copy, by
// workspace-relative path, without agentls's own state (.agentls) and git.
type snapshot map[string][]byte

func takeSnapshot(root string) (snapshot, error) {
	s := snapshot{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".agentls" || rel == ".git" || d.Name() == "__pycache__" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s[rel] = b
		return nil
	})
	return s, err
}

// score checks a task's outcome; it returns what failed (nothing when the
// task is solved). before is the workspace as the task found it.
func score(ctx context.Context, t Task, root string, before snapshot, res *agent.Result, run runCheck) ([]string, error) {
	var fails []string
	want := t.Check.Status
	if want == "" {
		want = agent.StateCompleted
	}
	if res.Status != want {
		why := string(res.StopReason)
		if res.Error != "" {
			why += ": " + firstLine(res.Error)
		}
		fails = append(fails, fmt.Sprintf("status %s (%s); want %s", res.Status, why, want))
	}
	for _, re := range t.Check.Answer {
		if !match(re, res.Answer) {
			fails = append(fails, fmt.Sprintf("answer does not match /%s/", re))
		}
	}
	for _, re := range t.Check.NotAnswer {
		if match(re, res.Answer) {
			fails = append(fails, fmt.Sprintf("answer matches /%s/", re))
		}
	}
	for _, re := range t.Check.NoCommand {
		for _, c := range res.Commands {
			if match(re, c.Command) {
				fails = append(fails, fmt.Sprintf("ran %q (matches /%s/)", c.Command, re))
			}
		}
	}
	if len(t.Check.PlanFiles) > 0 {
		for _, f := range t.Check.PlanFiles {
			if !slices.Contains(res.PlannedFiles, f) {
				fails = append(fails, fmt.Sprintf("the plan does not name %s (it names %v)", f, res.PlannedFiles))
			}
		}
	}
	after, err := takeSnapshot(root)
	if err != nil {
		return nil, fmt.Errorf("read the workspace after the task: %w", err)
	}
	for _, g := range t.Check.Unchanged {
		for _, p := range keys(before) {
			if ok, _ := doublestar.Match(g, p); !ok {
				continue
			}
			if b, exists := after[p]; !exists {
				fails = append(fails, p+" was deleted")
			} else if !bytes.Equal(b, before[p]) {
				fails = append(fails, p+" changed")
			}
		}
		if g == "**" {
			for _, p := range keys(after) {
				if _, was := before[p]; !was {
					fails = append(fails, p+" was created")
				}
			}
		}
	}
	for _, p := range t.Check.Changed {
		if b, ok := after[p]; !ok {
			fails = append(fails, p+" does not exist")
		} else if old, was := before[p]; was && bytes.Equal(b, old) {
			fails = append(fails, p+" did not change")
		}
	}
	for _, p := range keys(t.Check.Contains) {
		b, ok := after[p]
		if !ok {
			fails = append(fails, p+" does not exist")
			continue
		}
		for _, re := range t.Check.Contains[p] {
			if !match(re, string(b)) {
				fails = append(fails, fmt.Sprintf("%s does not match /%s/", p, re))
			}
		}
	}
	for _, g := range keys(t.Check.Absent) {
		for _, p := range keys(after) {
			if ok, _ := doublestar.Match(g, p); !ok {
				continue
			}
			for _, re := range t.Check.Absent[g] {
				if match(re, string(after[p])) {
					fails = append(fails, fmt.Sprintf("%s still matches /%s/", p, re))
				}
			}
		}
	}
	if t.Check.Run != "" {
		if err := writeFiles(root, t.Hidden); err != nil {
			return nil, err
		}
		ok, out, err := run(ctx, root, t.Check.Run)
		if err != nil {
			return nil, err
		}
		if !ok {
			fails = append(fails, fmt.Sprintf("check %q failed: %s", t.Check.Run, lastLines(out, 6)))
		}
	}
	return fails, nil
}

// runCheck runs a check command in dir: ok is a zero exit.
type runCheck func(ctx context.Context, dir, command string) (ok bool, output string, err error)

// writeFiles writes files (workspace-relative paths) under root.
func writeFiles(root string, files map[string][]byte) error {
	for _, p := range keys(files) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the regular files and folders of src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
		return nil // no links or devices in a fixture
	})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// lastLines is the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > 600 {
		out = out[len(out)-600:]
	}
	return out
}
