package lsp

import (
	"fmt"
	"github.com/agentls/agentls/lsp/server"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools"
)

// progressSink turns a task's events into work-done progress reports: what
// the agent does now, then the plan as a checklist, with the percentage of
// items closed. Reports are throttled by WorkDone (at most 10 a second, the
// last state kept).
type progressSink struct {
	wd       *server.WorkDone
	maxTurns int       // the task's turn budget, shown beside the turns used
	start    time.Time // when the task started, for the elapsed time

	mu       sync.Mutex // guards the fields below
	activity string
	plan     tools.Plan
	turns    int    // model calls so far
	tokens   int    // input and output tokens so far
	seq      uint64 // counts activity changes, so a late idle timer knows it is stale
}

// idleAfterTool is how long a finished tool call's label stays before the
// progress says the model is thinking: long enough for a fast call to be
// seen (reports are throttled), short enough never to name a finished step
// for long.
const idleAfterTool = time.Second

func newProgressSink(wd *server.WorkDone, maxTurns int) *progressSink {
	return &progressSink{wd: wd, maxTurns: maxTurns, start: time.Now(), activity: "starting"}
}

// Event implements agent.Sink.
func (p *progressSink) Event(e agent.Event) {
	p.mu.Lock()
	changed := true
	switch e.Kind {
	case agent.EventState:
		switch e.State {
		case agent.StatePlanning:
			p.activity = "planning"
		case agent.StateExecuting:
			p.activity = "thinking"
		case agent.StateValidating:
			p.activity = "checking the result"
		default:
			changed = false // terminal: End carries the summary
		}
	case agent.EventPlan:
		if e.Plan != nil {
			p.plan = tools.Plan{Items: append([]tools.PlanItem(nil), e.Plan.Items...)}
		}
	case agent.EventToolStarted:
		p.activity = activity(e.Present)
	case agent.EventToolFinished:
		// The call is over: unless the agent does the next thing within
		// idleAfterTool, the model is thinking. (Not at once: a fast call
		// would be replaced within its throttle slot and never seen.)
		changed = false
		// A call whose tool says what it found ("references of Total
		// (a.go:4) via gopls: 14 in 6 file(s)") shows that line instead.
		if !e.IsError && e.Present != nil && e.Present.Outcome != "" {
			p.activity = cutLine(e.Present.Outcome, 100)
			changed = true
		}
		seq := p.seq
		if changed {
			seq++ // the report below counts as the latest change
		}
		time.AfterFunc(idleAfterTool, func() {
			p.mu.Lock()
			if p.seq != seq {
				p.mu.Unlock()
				return
			}
			p.activity = "thinking"
			p.seq++
			msg, pct := p.render()
			p.mu.Unlock()
			p.wd.Report(msg, pct)
		})
	case agent.EventRetry:
		if e.Retry != nil {
			p.activity = retryText(e.Retry.Wait, e.Retry.Status, e.Retry.Err)
		}
	case agent.EventText:
		changed = p.activity != "writing the answer"
		p.activity = "writing the answer"
	case agent.EventUsage:
		p.turns++
		p.tokens = e.Total.InputTokens + e.Total.OutputTokens
	case agent.EventNote:
		// What the loop told the model (a loop warning, a cut response, a
		// gate's nudge) is what the user should see too.
		p.activity = "note: " + cutLine(e.Text, 100)
	default:
		changed = false
	}
	var msg string
	pct := -1
	if changed {
		p.seq++
		msg, pct = p.render()
	}
	p.mu.Unlock()
	if changed {
		p.wd.Report(msg, pct)
	}
}

// governor is the budget in use: " · turn 3/30 · 12.3k tokens · 14 s".
// p.mu must be held.
func (p *progressSink) governor() string {
	if p.turns == 0 {
		return ""
	}
	turns := fmt.Sprintf("turn %d", p.turns)
	if p.maxTurns > 0 {
		turns += fmt.Sprintf("/%d", p.maxTurns)
	}
	tokens := fmt.Sprintf("%d tokens", p.tokens)
	if p.tokens >= 1000 {
		tokens = fmt.Sprintf("%.1fk tokens", float64(p.tokens)/1000)
	}
	return fmt.Sprintf(" · %s · %s · %d s", turns, tokens, int(time.Since(p.start).Seconds()))
}

// setActivity shows what the task waits for now, until its next event.
func (p *progressSink) setActivity(text string) {
	p.swapActivity(text)
}

// swapActivity is setActivity, returning the activity it replaced.
func (p *progressSink) swapActivity(text string) (prev string) {
	p.mu.Lock()
	prev = p.activity
	p.activity = text
	p.seq++
	msg, pct := p.render()
	p.mu.Unlock()
	p.wd.Report(msg, pct)
	return prev
}

// render is the report: the activity, then one line per plan item.
// p.mu must be held.
func (p *progressSink) render() (string, int) {
	var b strings.Builder
	b.WriteString(p.activity)
	b.WriteString(p.governor())
	if len(p.plan.Items) == 0 {
		return b.String(), -1
	}
	closed := 0
	for _, it := range p.plan.Items {
		b.WriteString("\n")
		b.WriteString(session.PlanLine(it))
		if it.Status == tools.PlanDone || it.Status == tools.PlanSkipped {
			closed++
		}
	}
	return b.String(), closed * 100 / len(p.plan.Items)
}

// retryText is "retrying in 4 s (429)".
func retryText(wait time.Duration, status int, why string) string {
	var w string
	if wait < time.Second {
		w = fmt.Sprintf("%.1f s", wait.Seconds())
	} else {
		w = fmt.Sprintf("%d s", int(math.Ceil(wait.Seconds())))
	}
	cause := "connection error"
	if status != 0 {
		cause = fmt.Sprint(status)
	} else if why != "" {
		cause = cutLine(why, 40)
	}
	return fmt.Sprintf("retrying in %s (%s)", w, cause)
}

// activity is what a tool call does, for people ("reading lsp/server.go",
// "running go test ./..."), as the call's tool describes it.
func activity(p *tools.Presentation) string {
	if p == nil || p.Activity == "" {
		return "calling a tool"
	}
	return cutLine(p.Activity, 100)
}

// cutLine is the first line of s, trimmed and cut to n runes.
func cutLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
