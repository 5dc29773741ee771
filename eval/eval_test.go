package eval

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools/sandbox"
)

// Started as the sandbox supervisor of a command, the test binary is that
// supervisor and nothing else.
func init() { sandbox.Main() }

func scriptedOptions(t *testing.T, only string) Options {
	t.Helper()
	s, _ := session.FromEnv(func(string) string { return "" })
	s.MaxTime = session.Duration(2 * time.Minute)
	s.Recordings = false
	o := Options{Suite: Builtin(), Settings: s, Scripted: true, Parallel: 2}
	if testing.Verbose() {
		o.Progress = os.Stderr
	}
	if only != "" {
		o.Only = regexp.MustCompile(only)
	}
	return o
}

func TestScriptedSuite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, scriptedOptions(t, os.Getenv("EVAL_RUN")))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Tasks {
		if !r.Solved {
			t.Errorf("%s: unsolved: %q (answer %q, notes %q)", r.Name, r.Failures, r.Answer, r.Notes)
		} else if r.ModelCalls != r.MinCalls {
			t.Errorf("%s: %d model calls; want its minimum %d", r.Name, r.ModelCalls, r.MinCalls)
		}
	}
}
