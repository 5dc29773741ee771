// Package agent runs tasks: it plans, calls the model, runs the tools it
// asks for, validates the result and stops at the right moment with a
// named reason. It talks to the model through Model, to tools through
// tools.Tool, and to the editor through Sink; it never imports an LSP
// library.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/journal"
	"github.com/agentls/agentls/agent/llm"
	flightrec "github.com/agentls/agentls/agent/llm/recorder"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/tools"
)

// Model is the model client the loop needs; *llm.Client satisfies it.
type Model interface {
	Complete(ctx context.Context, req llm.Request, onEvent func(llm.Event)) (*llm.Response, error)
}

// recordable is a Model that can also write one task's calls to the task's
// flight recorder (*llm.Client): the recorder wraps the model. A Model
// without it (a test's scripted model) is not recorded.
type recordable interface {
	RecordingTo(r llm.Recorder) *llm.Recorded
}

// Clarifier asks the user a question. An empty answer means "proceed
// with your best interpretation".
type Clarifier interface {
	Clarify(ctx context.Context, question string) (string, error)
}

// Config is what one task runs with: its model, its tools and the guard
// they were built with, where it is recorded, and the loop's limits. The
// zero value of each limit means its default.
type Config struct {
	// Model answers the task's calls; required.
	Model Model
	// Tools are the tools the task may be offered (an ask or plan task
	// gets the read-only ones). Build them with Guard: wrap the workspace
	// editor with Guard.Editor and the approver with Guard.Approver, so
	// edits and approvals of a task that is not executing are rejected.
	Tools []tools.Tool
	// Guard is the task's gate the tools were built with; nil means a
	// guard of its own (then no tool can reach it).
	Guard *Guard

	Root          string        // workspace root, named in the system prompt
	ModelName     string        // for the context window
	ContextWindow int           // tokens; 0 means ContextWindow(ModelName, 128000)
	CompactAt     float64       // compact when a request exceeds this share of the window (0.8)
	MaxTurns      int           // model calls per task (30)
	MaxTokens     int           // input+output tokens per task; 0 means no limit
	MaxTime       time.Duration // wall time per task; 0 means no limit
	Validate      ValidateMode  // validator model call; "" means ValidateEdits
	Check         Checker       // the workspace's check command, run after edits; nil means none
	CheckRounds   int           // failed checks fed back before giving up (2)
	Rounds        int           // nudges per gate (open plan, validator, evidence) before giving up (2)
	Clarifier     Clarifier     // nil means the ask_user tool is not offered
	Counter       TokenCounter  // nil means tiktoken o200k_base
	// MaxToolCalls is how many tool calls of one model response run
	// (DefaultMaxToolCalls); the rest get a result asking the model to call
	// them in its next response.
	MaxToolCalls int
	// MaxStoredBytes bounds the text of a task's messages and tool calls
	// in the session store (DefaultMaxStoredBytes): past it, each text is
	// stored cut to its head with a marker. The model still gets every
	// result whole (as bounded by its tool).
	MaxStoredBytes int

	// Recorder writes the task down as it runs (journal.Writer: the
	// session store): messages, plans, tool calls, edits, approvals, state
	// changes, the end and the lesson of a failure. nil records nothing.
	Recorder Recorder
	// Lessons are the lessons of earlier failed tasks about what the task
	// is about (journal.Lessons of LessonAbout(spec)), shown to a new task.
	Lessons []journal.Lesson
	// Earlier is the task spec.FollowUp names when it ran in an earlier
	// process (journal.Earlier); a task of the registry is found there.
	Earlier *journal.Past
	// Files reads workspace files as the tools see them (open buffers
	// first), for the project instructions; nil reads them from disk
	// under Root.
	Files Files
	// Recordings is the folder of the flight recorder: each task appends its
	// model exchanges (never the API key) to <Recordings>/<task ID>.jsonl.
	// "" means <Root>/.agentls/recordings when Root is an existing folder.
	Recordings string
	// NoRecord turns the flight recorder off.
	NoRecord bool
	// Registry lists the tasks of a host, where follow-ups find the task
	// they continue; nil means a registry of the task's own.
	Registry *TaskRegistry
	// Secrets returns the values hidden from the model in tool results and
	// from the flight recorder (the host's redactor's), besides secrets of
	// a known shape; nil means only those.
	Secrets func() []string
	// StopHook, when set, is asked when the task would complete with
	// answer (every gate passed): a non-empty reply sends the model back
	// with that text, once per task; active is true once it has been.
	StopHook func(ctx context.Context, taskID, answer string, active bool) string
}

func (c Config) withDefaults() Config {
	if c.Registry == nil {
		c.Registry = NewTaskRegistry()
	}
	if c.Guard == nil {
		c.Guard = NewGuard()
	}
	if c.Counter == nil {
		// Load the tokenizer's tables (~0.2 s) now, not at the first call.
		go defaultCounter.count("warm up")
	}
	if c.ContextWindow == 0 {
		c.ContextWindow = ContextWindow(c.ModelName, 128_000)
	}
	if c.CompactAt == 0 {
		c.CompactAt = 0.8
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = 30
	}
	if c.Validate == "" {
		c.Validate = ValidateEdits
	}
	if c.CheckRounds == 0 {
		c.CheckRounds = 2
	}
	if c.Rounds == 0 {
		c.Rounds = 2
	}
	if c.Counter == nil {
		c.Counter = DefaultTokenCounter()
	}
	if c.MaxToolCalls <= 0 {
		c.MaxToolCalls = DefaultMaxToolCalls
	}
	if c.MaxStoredBytes <= 0 {
		c.MaxStoredBytes = DefaultMaxStoredBytes
	}
	return c
}

// DefaultMaxToolCalls is how many tool calls of one response run. Their
// results (at most 32 x 200 KiB of read_file) fit one request and the
// task's store budget, and the work they cause is bounded with them: one
// response of 1,000 reads took the server to 221 MB and the store to 146 MB
// when all ran (BenchmarkOneResponseManyReads). Models that batch calls
// send a handful per response; 32 leaves room for a wide read of a package.
const DefaultMaxToolCalls = 32

// maxParallelCalls is how many read-only calls of a response run at once.
// A read of a file at the workspace's read limit (2 MiB) allocates about
// 10 MB while it runs (read, decoded, hashed, numbered), so the calls in
// flight, not the calls of the response, set the live memory: 8 keep it
// under 100 MB on any number of cores (32 reads of 2 MiB files peak at
// about 130 MB of RSS with the server's baseline, as with no limit on 2
// cores; 2 at once would give about 105 MB).
const maxParallelCalls = 8

// DefaultMaxStoredBytes is the session store's text budget per task (see
// Config.MaxStoredBytes): a long task keeps every result whole, a response
// that floods the store keeps a few MB.
const DefaultMaxStoredBytes = 2 << 20

var (
	errCancelled  = errors.New("task cancelled")
	errTimeBudget = errors.New("task time budget spent")
)

// Run starts a task and waits for its result.
func Run(ctx context.Context, cfg Config, spec TaskSpec, sink Sink) (*Result, error) {
	t, err := Start(ctx, cfg, spec, sink)
	if err != nil {
		return nil, err
	}
	<-t.Done()
	return t.Result(), nil
}

// Start queues a task and runs it on its own goroutine, which ends when the
// task ends (Done is closed). The task's context derives from ctx: cancel
// ctx or call Cancel to stop it. sink may be nil. A task that is refused
// runs its guard's OnDone functions at once (its tools are closed).
func Start(ctx context.Context, cfg Config, spec TaskSpec, sink Sink) (*Task, error) {
	cfg = cfg.withDefaults()
	t, err := start(ctx, cfg, spec, sink)
	if err != nil {
		cfg.Guard.done()
	}
	return t, err
}

func start(ctx context.Context, cfg Config, spec TaskSpec, sink Sink) (*Task, error) {
	if cfg.Model == nil {
		return nil, errors.New("start task: no model")
	}
	if spec.ResumeID != "" {
		return nil, fmt.Errorf("resume %s: an interrupted task continues with Continue, from its journal", spec.ResumeID)
	}
	if strings.TrimSpace(spec.Prompt) == "" {
		return nil, errors.New("start task: empty prompt")
	}
	switch spec.Kind {
	case "":
		spec.Kind = KindAsk
	case KindAsk, KindEdit, KindPlan:
	default:
		return nil, fmt.Errorf("start task: unknown kind %q (want ask, edit or plan)", spec.Kind)
	}
	var prev *Result
	session := ""
	if spec.FollowUp != "" {
		var err error
		if prev, session, err = previous(cfg, spec.FollowUp); err != nil {
			return nil, fmt.Errorf("start task: %w", err)
		}
	}
	id := cfg.Registry.newID()
	if session == "" {
		session = id
	}
	t, tctx, cancel := newTask(ctx, cfg, id, session, spec, sink)
	t.createTask()
	cfg.Registry.add(t)
	launch(tctx, cancel, &run{t: t, cfg: cfg, prev: prev, lessons: cfg.Lessons})
	return t, nil
}

// newTask makes a task (not yet listed or started) and its context.
func newTask(ctx context.Context, cfg Config, id, session string, spec TaskSpec, sink Sink) (*Task, context.Context, context.CancelCauseFunc) {
	tctx, cancel := context.WithCancelCause(ctx)
	t := &Task{
		id:        id,
		spec:      spec,
		sink:      &taskSink{out: sink},
		done:      make(chan struct{}),
		start:     time.Now(),
		state:     StateQueued,
		changes:   &changeLog{},
		rec:       cfg.Recorder,
		sessionID: session,
	}
	t.cancel = func() { cancel(errCancelled) }
	// However the task's context ends (Cancel, or the caller's ctx), nothing
	// of the task is published afterwards but its end. After a normal
	// end the result has been published already.
	context.AfterFunc(tctx, t.sink.cancel)
	return t, tctx, cancel
}

// launch binds the task's guard to it and runs its loop on its own
// goroutine.
func launch(tctx context.Context, cancel context.CancelCauseFunc, x *run) {
	x.stats = map[string]ToolStat{}
	x.start = time.Now()
	x.guard = x.cfg.Guard
	x.guard.bind(x.t)
	go func() {
		defer close(x.t.done)
		defer cancel(nil)
		x.main(tctx)
	}()
}

// previous returns the result and the session of the task a follow-up
// continues: a task of the registry, or one of an earlier run
// (Config.Earlier, read back from the journal after a restart).
func previous(cfg Config, id string) (*Result, string, error) {
	if p := cfg.Registry.Task(id); p != nil {
		res := p.Result()
		if res == nil {
			return nil, "", fmt.Errorf("task %s is still running", id)
		}
		return res, p.sessionID, nil
	}
	e := cfg.Earlier
	if e == nil || e.ID != id {
		return nil, "", fmt.Errorf("follow-up of unknown task %q", id)
	}
	res := &Result{
		TaskID: e.ID, Kind: Kind(e.Kind), Prompt: e.Prompt, Status: State(e.State),
		StopReason: StopReason(e.StopReason), Answer: render.Inert(e.Answer), Error: e.Error,
		ModelCalls: e.ModelCalls, Usage: e.Usage, ModelTime: e.ModelTime, ToolTime: e.ToolTime,
	}
	if e.Plan != nil {
		res.Plan, res.PlanUpdates = *e.Plan, e.PlanUpdates
	}
	return res, e.SessionID, nil
}

// run is the state of one task's loop; it lives on the task's goroutine.
type run struct {
	t    *Task
	cfg  Config
	prev *Result

	offered []tools.Tool
	defs    []llm.ToolDef
	guard   *Guard

	start       time.Time
	turns       int
	usage       llm.Usage
	modelTime   time.Duration
	toolTime    time.Duration
	stats       map[string]ToolStat
	calls       []callRecord
	seenIDs     map[string]bool // the call ids this run gave out (identify)
	planUpdates int
	notes       []string
	commands    []tools.CommandOutput
	lastAnswer  string
	loops       loopDetector
	graceUsed   bool
	rounds      map[StopReason]int // nudges given per gate
	checks      int
	injected    bool // a message was injected and awaits its model turn
	// noChangeAsked: the model of an edit task that changed no file was
	// asked once whether it meant to.
	noChangeAsked bool
	// stopHooked: a Stop hook sent the model back once (Config.StopHook).
	stopHooked bool

	// Recording (Config.Recorder).
	seq     int              // Seq of the task's next recorded message
	hseq    []int            // Seq of each history entry, -1 when not recorded
	resume  *journal.Resumed // set when the run continues an interrupted task
	callIDs map[string]int   // tool call IDs recorded so far, and how often
	// storedBytes is the text the task wrote to the store so far (see bound).
	storedBytes int
	gateOnce    sync.Once
	cgate       *ctxgate.Gate       // see ctxGate
	hid         atomic.Bool         // a tool result of the task had a secret hidden
	rec         *flightrec.Recorder // the flight recorder, opened at the first call
	recOff      bool                // no flight recording for this task

	// lessons are the lessons of earlier failed tasks the task was shown;
	// instr the project instruction files in its system prompt.
	lessons []journal.Lesson
	instr   instructions

	// text and thought make the model's streamed text inert before the
	// sink sees it (render.Stream); made at the first call, flushed at the
	// end of each.
	text, thought *render.Stream
}

func (x *run) main(ctx context.Context) {
	if x.cfg.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, x.cfg.MaxTime, errTimeBudget)
		defer cancel()
	}
	x.rounds = map[StopReason]int{}
	x.offer()
	defer x.closeFlight()

	first := StateExecuting
	if x.resume != nil && len(x.resume.History) > 0 {
		first = x.restore(ctx)
	} else {
		x.instr = loadInstructions(ctx, x.cfg.Files, x.cfg.Root, x.t.spec, x.ctxGate())
		x.appendMsg(llm.Message{Role: llm.RoleSystem, Content: systemPrompt(x.cfg.Root, x.t.spec.Kind) + x.instr.text}, msgMeta{}, nil)
		task := taskMessage(x.t.spec, x.prev, x.lessons)
		if x.prev != nil && x.prev.Kind == KindPlan && x.t.spec.Kind == KindEdit {
			task = x.startFromPlan(x.prev.Plan) + "\n" + task
		}
		x.appendMsg(llm.Message{Role: llm.RoleUser, Content: task, Images: x.t.spec.Images}, msgMeta{}, nil)
		for _, m := range x.t.spec.Resume {
			x.appendMsg(m, msgMeta{}, nil)
		}
		x.flush(ctx)
		if x.t.spec.Kind == KindEdit {
			first = StatePlanning // the first response of an edit task makes the plan (no separate call)
		}
	}
	if err := x.t.transition(first); err != nil {
		x.guard.done()
		x.finish(StateFailed, StopModelError, "", err)
		return
	}
	status, reason, answer, err := x.loop(ctx)
	x.guard.done()
	x.finish(status, reason, answer, err)
}

// offer picks the tools of this task: all for edit tasks, read-only ones
// for ask tasks, plus ask_user when a Clarifier is configured. The list and
// its order are fixed for the task.
func (x *run) offer() {
	for _, tl := range x.cfg.Tools {
		if x.t.spec.Kind != KindEdit && !tl.ReadOnly() {
			continue
		}
		x.offered = append(x.offered, tl)
	}
	if x.cfg.Clarifier != nil {
		x.offered = append(x.offered, &clarifyTool{c: x.cfg.Clarifier})
	}
	for _, tl := range x.offered {
		x.defs = append(x.defs, llm.ToolDef{Name: tl.Name(), Description: tl.Description(), Parameters: tl.Schema()})
	}
}

// stopCause maps a dead context to its stop reason.
func stopCause(ctx context.Context) (State, StopReason, error) {
	if errors.Is(context.Cause(ctx), errTimeBudget) {
		return StateFailed, StopTimeBudget, errTimeBudget
	}
	return StateCancelled, StopCancelled, errCancelled
}

// stopped is stopCause with an empty answer, for loop's returns.
func stopped(ctx context.Context) (State, StopReason, string, error) {
	s, r, err := stopCause(ctx)
	return s, r, "", err
}

// inject appends a message the loop writes (nudge, correction, cut notice);
// it is always followed by one more model turn.
func (x *run) inject(text string) {
	x.appendMsg(llm.Message{Role: llm.RoleUser, Content: text}, msgMeta{}, nil)
	x.notes = append(x.notes, text)
	x.injected = true
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventNote, Text: text})
}

// loop runs model turns until a stop decision.
func (x *run) loop(ctx context.Context) (State, StopReason, string, error) {
	for {
		if ctx.Err() != nil {
			return stopped(ctx)
		}
		if x.turns >= x.cfg.MaxTurns {
			// An injected message always gets its turn, once per task.
			if !x.injected || x.graceUsed {
				return StateFailed, StopTurnBudget, x.lastAnswer, fmt.Errorf("turn budget of %d model calls spent", x.cfg.MaxTurns)
			}
			x.graceUsed = true
		}
		if x.cfg.MaxTokens > 0 && x.usage.InputTokens+x.usage.OutputTokens >= x.cfg.MaxTokens {
			return StateFailed, StopTokenBudget, x.lastAnswer, fmt.Errorf("token budget of %d spent", x.cfg.MaxTokens)
		}
		resp, err := x.call(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return stopped(ctx)
			}
			return StateFailed, StopModelError, "", fmt.Errorf("model call %d: %w", x.turns, err)
		}
		if x.t.State() == StatePlanning {
			if err := x.t.transition(StateExecuting); err != nil {
				return StateFailed, StopModelError, "", err
			}
		}
		x.injected = false
		meta := msgMeta{modelCall: true, usage: resp.Usage, duration: resp.Duration}
		// A cut response is neither executed nor kept (the store keeps
		// it, excluded from the context, for the record and the totals).
		if resp.Truncated() {
			meta.excluded = journal.ExcludedTruncated
			x.storeMsg(resp.Message, meta)
			x.inject(fmt.Sprintf("Your previous response was cut at the output token limit, so it was discarded and none of its %d tool call(s) ran. Retry with fewer tool calls or shorter text.", len(resp.Message.ToolCalls)))
			continue
		}
		// The history keeps arguments in a form every provider accepts
		//; the calls run with what the model sent, so a garbage
		// argument gets an error result that quotes it.
		x.identify(resp.Message.ToolCalls)
		raw := resp.Message.ToolCalls
		stored := resp.Message
		stored.ToolCalls = historyCalls(raw)
		msg := stored
		msg.Reasoning = ""
		x.appendMsg(msg, meta, &stored)
		// A crash while the tool calls run loses nothing before them.
		x.flush(ctx)

		// Apply everything in the response first (up to MaxToolCalls;
		// the rest are answered without running, so every call of the
		// history has its result)...
		run, refused := raw, []llm.ToolCall(nil)
		if len(raw) > x.cfg.MaxToolCalls {
			run, refused = raw[:x.cfg.MaxToolCalls], raw[x.cfg.MaxToolCalls:]
		}
		repeated, err := x.runCalls(ctx, run)
		if err == nil && len(refused) > 0 {
			x.refuseCalls(refused, len(raw))
		}
		if err != nil {
			if ctx.Err() != nil {
				return stopped(ctx)
			}
			return StateFailed, StopToolError, "", err
		}
		// ...then decide on the updated state.
		if !isFinal(msg) {
			if repeated {
				if x.loops.warned {
					return StateFailed, StopLoopDetected, x.lastAnswer, errors.New("the model repeated the same tool call with the same result after a warning")
				}
				x.loops.warned = true
				x.inject("You repeated a tool call that returned the same result as before. Do not repeat it: use what you already have, try something different, or give your final answer.")
			}
			continue
		}
		answer := strings.TrimSpace(msg.Content)
		norm := normalizeAnswer(answer)
		if norm != "" && norm == x.lastAnswer {
			// The same whole answer twice: stop now, on the state as it is.
			// It passes the same gates as any completion (plan, evidence,
			// check command, validator); a gate that would nudge fails the
			// task instead, since the model only repeats itself.
			status, reason, gerr, nudge := x.gate(ctx, answer)
			if nudge != "" {
				return StateFailed, reason, answer, errors.New("the model repeated its answer, but: " + firstLine(nudge, 300))
			}
			if status == StateCompleted {
				reason = StopRepeatedAnswer
			}
			return status, reason, answer, gerr
		}
		x.lastAnswer = norm
		status, reason, gerr, nudge := x.gate(ctx, answer)
		if nudge == "" && status == StateCompleted && x.cfg.StopHook != nil {
			if msg := x.cfg.StopHook(ctx, x.t.id, answer, x.stopHooked); msg != "" && !x.stopHooked && ctx.Err() == nil {
				x.stopHooked = true
				if err := x.t.transition(StateExecuting); err != nil {
					return StateFailed, reason, answer, err
				}
				x.inject(msg)
				continue
			}
		}
		if nudge == "" {
			return status, reason, answer, gerr
		}
		if x.rounds[reason]++; x.rounds[reason] > x.limit(reason) {
			return StateFailed, reason, answer, errors.New(nudge)
		}
		if err := x.t.transition(StateExecuting); err != nil {
			return StateFailed, reason, answer, err
		}
		x.inject(nudge)
	}
}

func (x *run) limit(r StopReason) int {
	if r == StopCheckFailed {
		return x.cfg.CheckRounds
	}
	return x.cfg.Rounds
}

// changeVerbs are the verbs of an answer that reports a change made.
const changeVerbs = `(changed|updated|added|fixed|renamed|replaced|removed|deleted|created|modified|implemented|refactored|edited|wrote|rewrote|moved|converted|inserted|applied)`

// claimsChange matches a sentence that reports a change the agent made:
// with itself as the subject ("I updated Foo", "we've added") or in the
// present perfect ("the test has been fixed"). reportsChange matches the
// terse form that starts with the verb ("Fixed the test", "Renamed X to
// Y"), unless the verb is an adjective of a description ("Deleted rows
// are removed nightly"). A description of what code does ("negative
// quantities are added too", "entries are removed when full") is none of
// these.
var (
	claimsChange = lazyregexp.New(`(?i)\b(i|we)('ve| have)?(\s+(just|also|then|now|already))*\s+` + changeVerbs + `\b` +
		`|(?i)\b(has|have) (now )?been ` + changeVerbs + `\b`)
	reportsChange = lazyregexp.New(`(?i)^\s*(done\W+)?(and\s+)?` + changeVerbs + `\b`)
	describes     = lazyregexp.New(`(?i)\b(is|are)\b`)
)

// negation matches a sentence that denies a change: "I changed nothing",
// "no file was modified", "did not edit", "nothing needed to be changed".
var negation = lazyregexp.New(`(?i)\b(no|not|nothing|never|none|without|didn't|don't|haven't|hasn't|wasn't|isn't|needn't|neither|nor)\b|n't\b`)

// sentenceBreak splits prose into sentences and clauses.
var sentenceBreak = lazyregexp.New(`[.!?;:\n]+`)

// claimsChangeMade reports whether some sentence of answer (its prose, not
// the code it quotes) reports a change made, without denying it in the
// same sentence.
func claimsChangeMade(answer string) bool {
	for _, s := range sentenceBreak.Split(prose(answer), -1) {
		claim := claimsChange.MatchString(s) || reportsChange.MatchString(s) && !describes.MatchString(s)
		if claim && !negation.MatchString(s) {
			return true
		}
	}
	return false
}

// isFinal reports a response that ends the model's work: no tool call, or
// only update_plan calls next to a non-empty answer (the last plan
// update and the answer arrive together).
func isFinal(m llm.Message) bool {
	for _, c := range m.ToolCalls {
		if c.Name != "update_plan" {
			return false
		}
	}
	return len(m.ToolCalls) == 0 || strings.TrimSpace(m.Content) != ""
}

// gate is the final gate, run in the validating state. It returns a nudge
// (and the reason it stands for) when the model must work more; otherwise
// the terminal status.
func (x *run) gate(ctx context.Context, answer string) (State, StopReason, error, string) {
	if err := x.t.transition(StateValidating); err != nil {
		return StateFailed, StopModelError, err, ""
	}
	if answer == "" {
		return StateFailed, StopEmptyAnswer, nil, "Your response was empty. Give your final answer, or continue the work with tools."
	}
	if x.t.spec.Kind == KindPlan {
		// A plan task ends with a plan; its items stay open by design and
		// no check or validator judges a change that was not made.
		if len(x.t.Plan().Items) == 0 {
			return StateFailed, StopPlanOpen, nil, "A plan task ends with a plan: call update_plan with the steps (status pending) and the files each would change, then give your answer: what would change and why, and the commands you would run."
		}
		return StateCompleted, StopAnswered, nil, ""
	}
	if why := x.basicGate(answer); why != "" {
		reason := StopPlanOpen
		if openCount(x.t.Plan()) == 0 {
			reason = StopNoEvidence
		}
		return StateFailed, reason, nil, why
	}
	if x.t.spec.Kind == KindEdit && x.t.changes.count() == 0 && !x.noChangeAsked {
		// An edit task that ends without changing a file is asked once
		// whether a change was meant; the answer after that stands, and the
		// result says plainly that no file changed.
		x.noChangeAsked = true
		if claimsChangeMade(answer) {
			return StateFailed, StopNoChange, nil, "No file was changed in this task, yet your answer reads as if you changed something. If a change is needed, make it now with edit_file or write_file; if none is needed, say so plainly."
		}
	}
	// The check runs after changes, and for a task started for an editor
	// diagnostic even without one (the diagnostic must be gone).
	if x.cfg.Check != nil && (x.t.changes.count() > 0 || len(x.t.spec.Context.Diagnostics) > 0 && x.t.spec.Kind == KindEdit) {
		x.checks++
		ok, out, err := x.cfg.Check.Check(ctx)
		if ctx.Err() != nil {
			s, r, e := stopCause(ctx)
			return s, r, e, ""
		}
		if err != nil {
			return StateFailed, StopCheckFailed, err, ""
		}
		x.calls = append(x.calls, callRecord{Tool: "check", Args: "", IsError: !ok, Evidence: tail(out, 2000)})
		if !ok {
			return StateFailed, StopCheckFailed, nil, "The check command failed after your changes. Fix the problem and answer again.\n" + out
		}
	}
	if x.cfg.Validate == ValidateOn || (x.cfg.Validate == ValidateEdits && x.t.spec.Kind == KindEdit) {
		req := validatorRequest(x.t.spec, answer, renderPlan(x.t.Plan()), x.calls, x.t.changes.list())
		resp, err := x.complete(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				s, r, e := stopCause(ctx)
				return s, r, e, ""
			}
			// The work passed every deterministic gate: a validator that
			// cannot be reached leaves it unjudged, not failed.
			x.notes = append(x.notes, fmt.Sprintf("validator call failed, result not independently checked: %v", err))
			return StateCompleted, StopAnswered, nil, ""
		}
		x.storeMsg(resp.Message, msgMeta{modelCall: true, usage: resp.Usage, duration: resp.Duration, excluded: excludedValidator})
		v := parseVerdict(resp.Message.Content)
		if v.Unreadable {
			x.notes = append(x.notes, "validator reply was neither PASS nor FAIL, result not independently checked: "+v.Reason)
		}
		if !v.Pass {
			return StateFailed, StopValidationFailed, nil, "A check of your work found a problem: " + v.Reason + "\nFix it, then give your final answer."
		}
	}
	return StateCompleted, StopAnswered, nil, ""
}

// basicGate is the part of the final gate that costs no call: no plan item
// open and "nothing found" backed by a real search. It returns
// what is wrong, or "".
func (x *run) basicGate(answer string) string {
	p := x.t.Plan()
	if openCount(p) > 0 {
		var open []string
		for _, it := range p.Items {
			if it.Status != tools.PlanDone && it.Status != tools.PlanSkipped {
				open = append(open, fmt.Sprintf("%s (%s)", it.ID, it.Text))
			}
		}
		return fmt.Sprintf("%d plan item(s) are still open: %s. Finish them, or close an item that needs no change with update_plan as skipped with reason \"already satisfied\".", len(open), strings.Join(open, "; "))
	}
	return evidenceGap(answer, x.t.spec, x.calls)
}

func openCount(p tools.Plan) int { return p.Open() }

// call sends the task's history (repaired, compacted when near the window)
// to the model.
func (x *run) call(ctx context.Context) (*llm.Response, error) {
	// Only this goroutine changes the history; the lock is for readers.
	x.t.mu.Lock()
	msgs, added, dropped := RepairHistory(x.t.history)
	plan := x.t.plan
	x.t.mu.Unlock()
	if added+dropped > 0 {
		x.notes = append(x.notes, fmt.Sprintf("history repaired: %d synthetic result(s) added, %d orphan(s) dropped", added, dropped))
	}
	reason := excludedRepaired
	limit := int(float64(x.cfg.ContextWindow) * x.cfg.CompactAt)
	if CountRequest(x.cfg.Counter, msgs, x.defs) > limit {
		if c, ok := Compact(x.cfg.Counter, msgs, x.defs, 2, plan, limit*3/5); ok {
			msgs = c
			reason = journal.ExcludedCompacted
			x.notes = append(x.notes, fmt.Sprintf("history compacted to %d messages", len(msgs)))
			// The model lost the results that were summarised: reading
			// them again is not a loop (the warning stays given).
			x.loops.seen = nil
		}
	}
	x.replaceHistory(msgs, reason)
	req := llm.Request{Messages: append([]llm.Message(nil), msgs...), Tools: x.defs}
	return x.complete(ctx, req)
}

// complete makes one model call and accounts for it.
func (x *run) complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	x.turns++
	start := time.Now()
	model := x.cfg.Model
	if fr := x.flight(); fr != nil {
		if rm, ok := model.(recordable); ok {
			model = rm.RecordingTo(fr)
		}
	}
	if x.text == nil {
		x.text = render.NewStream(func(s string) { x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventText, Text: s}) })
		x.thought = render.NewStream(func(s string) { x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventThought, Text: s}) })
	}
	// The context gate is the last step before the model: every message,
	// whatever built it, and every tool description.
	req = x.ctxGate().Request(req)
	resp, err := model.Complete(ctx, req, func(e llm.Event) {
		switch e.Kind {
		case llm.EventText:
			x.text.Write(e.Text)
		case llm.EventReasoning:
			x.thought.Write(e.Text)
		case llm.EventRetry:
			ev := e
			x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventRetry, Retry: &ev})
		}
	})
	x.thought.Flush()
	x.text.Flush()
	if resp != nil && resp.Duration > 0 {
		x.modelTime += resp.Duration
	} else {
		x.modelTime += time.Since(start)
	}
	if err != nil {
		return nil, err
	}
	x.usage = x.usage.Add(resp.Usage)
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventUsage, Usage: resp.Usage, Total: x.usage})
	return resp, nil
}

// outcome is one tool call's result.
type outcome struct {
	res tools.Result
	err error
}

// runCalls runs the calls of one response: consecutive read-only calls in
// parallel (at most maxParallelCalls at once), others one at a time in
// order. Each group's results are
// appended in call order and stored as soon as the group has finished, so a
// crash loses only the call in flight: calls that ran keep their real
// results after a resume. It reports whether a call repeated an earlier
// call with the same result.
func (x *run) runCalls(ctx context.Context, calls []llm.ToolCall) (bool, error) {
	repeated := false
	for i := 0; i < len(calls); {
		j := i + 1
		parallel := x.readOnly(calls[i].Name)
		if parallel {
			for j < len(calls) && x.readOnly(calls[j].Name) {
				j++
			}
		}
		outs := make([]outcome, j-i)
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxParallelCalls)
		for k := i; k < j; k++ {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				outs[k-i] = x.runOne(ctx, calls[k])
			}()
		}
		wg.Wait()
		for k, o := range outs {
			c := calls[i+k]
			if o.err != nil {
				if ctx.Err() != nil {
					return false, ctx.Err()
				}
				return false, fmt.Errorf("tool %s: %w", c.Name, o.err)
			}
			x.account(c, o.res)
			if x.loops.observe(c.Name, c.Arguments, o.res.Text) && c.Name != "update_plan" {
				repeated = true
			}
			text := o.res.Text + x.nestedInstructions(ctx, c, o.res)
			x.appendMsg(llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: text}, msgMeta{}, nil)
			x.recordToolCall(c, o.res)
		}
		if !parallel && j < len(calls) {
			x.flush(ctx) // a side effect happened: keep its result if the next call crashes
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		i = j
	}
	return repeated, nil
}

// identify gives every call of a response an id of its own in the task:
// the model's, or, where the model gave none or one an earlier call of the
// task had, one made here. Faces pair a call's start, approvals and end by
// this id alone; the history carries it back to the model.
func (x *run) identify(calls []llm.ToolCall) {
	if x.seenIDs == nil {
		x.seenIDs = map[string]bool{}
	}
	used := func(id string) bool { return x.seenIDs[id] || x.callIDs[id] > 0 }
	for i := range calls {
		if calls[i].ID == "" || used(calls[i].ID) {
			n := len(x.seenIDs) + 1
			id := fmt.Sprintf("call_%s_%d", x.t.id, n)
			for used(id) {
				n++
				id = fmt.Sprintf("call_%s_%d", x.t.id, n)
			}
			calls[i].ID = id
		}
		x.seenIDs[calls[i].ID] = true
	}
}

// refuseCalls answers the calls past MaxToolCalls of a response of n calls
// without running them. They are neither events for the editor (a response
// of thousands of calls must not become thousands of notifications: one
// note says how many were refused) nor tool calls of the store or the
// statistics: only their results in the history, which the model reads.
func (x *run) refuseCalls(calls []llm.ToolCall, n int) {
	text := fmt.Sprintf("not run: at most %d tool calls per response (this response had %d; the first %d ran); call the rest in your next response", x.cfg.MaxToolCalls, n, x.cfg.MaxToolCalls)
	for _, c := range calls {
		x.appendMsg(llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: text}, msgMeta{}, nil)
	}
	note := fmt.Sprintf("a response asked for %d tool calls: the first %d ran, the other %d were refused", n, x.cfg.MaxToolCalls, len(calls))
	x.notes = append(x.notes, note)
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventNote, Text: note})
}

// ctxGate is the task's context gate (agent/ctxgate): the secrets of
// Config.Secrets and those of a known shape, and the secret files of the
// workspace by their real target. It is built once per task (the secrets
// change with the settings only).
func (x *run) ctxGate() *ctxgate.Gate {
	x.gateOnce.Do(func() {
		var secrets []string
		if x.cfg.Secrets != nil {
			secrets = x.cfg.Secrets()
		}
		x.cgate = ctxgate.New(x.cfg.Root, redact.New(secrets...))
	})
	return x.cgate
}

func (x *run) readOnly(name string) bool {
	for _, tl := range x.offered {
		if tl.Name() == name {
			return tl.ReadOnly()
		}
	}
	return true // unknown tools only produce an error result
}

// runOne runs one call. Model mistakes (unknown tool, bad JSON) become
// error results the model can correct; a Go error is only returned for a
// task that is no longer executing.
func (x *run) runOne(ctx context.Context, c llm.ToolCall) outcome {
	if err := x.t.checkRunning(ctx); err != nil {
		return outcome{err: err}
	}
	args := json.RawMessage(c.Arguments)
	if strings.TrimSpace(c.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	summary := clip(oneLine(c.Arguments), 120)
	var tl tools.Tool
	for _, o := range x.offered {
		if o.Name() == c.Name {
			tl = o
		}
	}
	started := tools.Describe(tl, c.Name, args, nil)
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventToolStarted, CallID: c.ID, Tool: c.Name, Args: summary, RawArgs: args, Present: &started})
	call := tools.Call{ID: c.ID, Tool: c.Name, Args: args, Consent: &tools.Consent{}}
	if tl != nil {
		call.Effects = tl.Effects()
	}
	ctx = tools.WithCall(ctx, call)
	start := time.Now()
	var res tools.Result
	var err error
	switch {
	case tl == nil:
		res = tools.Result{IsError: true, Text: x.unavailable(c.Name)}
	case !json.Valid(args):
		res = tools.Result{IsError: true, Text: fmt.Sprintf("error: the arguments of %s are not valid JSON: %s; send a JSON object matching its schema", c.Name, clip(c.Arguments, 200))}
	case !tl.ReadOnly() && x.hid.Load() && strings.Contains(c.Arguments, redact.Text):
		// The model copies what it read: written back, "[redacted]" would
		// replace the secret it stands for.
		res = tools.Result{IsError: true, Text: fmt.Sprintf("error: not run: the arguments hold %s, which stands for a secret agentls hid from you in this task; writing it would destroy the secret. Leave the lines that hold secrets as they are (edit_file with an old_string that avoids them), or tell the user what to change there.", redact.Text)}
	default:
		res, err = tl.Run(ctx, args)
	}
	d := time.Since(start)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrNotExecuting) {
			return outcome{err: err}
		}
		// Infrastructure failure: the model reads it as an error result.
		res = tools.Result{IsError: true, Text: fmt.Sprintf("error: %s failed: %v", c.Name, err)}
	}
	// The model never reads a secret: a secret file by its real target
	// (unless the user allowed this call to read it), the configured
	// secret values, keys of a known shape, dotenv secret values.
	ran := res
	res, hid := x.ctxGate().Result(res, call.Consent)
	if hid {
		x.hid.Store(true)
	}
	res.CallID, res.Tool, res.Args = c.ID, c.Name, args
	if res.Duration == 0 {
		res.Duration = d
	}
	withheld := (ran.Data != nil && res.Data == nil) || (!ran.IsError && res.IsError)
	res.Present = presentation(tl, c.Name, args, res, started, withheld, x.ctxGate().Text)
	done := res
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventToolFinished, CallID: c.ID, Tool: c.Name, Args: summary, RawArgs: args, Duration: res.Duration, IsError: res.IsError, Text: render.Inert(firstLine(res.Text, 200)), Call: &done, Present: res.Present})
	return outcome{res: res}
}

// presentation is how a finished call looks: what its tool set on the
// result (or says of it now), over how it looked when it started, its text
// passed through the context gate (hide) like the result's: the faces
// show it. When the gate withheld the result, what the call found (a
// diff, a program's output, an answer's line) is left out.
func presentation(tl tools.Tool, name string, args json.RawMessage, res tools.Result, started tools.Presentation, withheld bool, hide func(string) string) *tools.Presentation {
	var p tools.Presentation
	if res.Present != nil {
		p = *res.Present
	} else {
		p = tools.Describe(tl, name, args, &res)
	}
	p = p.Over(started)
	if withheld {
		p.Diffs, p.Command, p.Outcome = nil, nil, ""
	}
	p.Title, p.Activity, p.Outcome = hide(p.Title), hide(p.Activity), hide(p.Outcome)
	if p.Command != nil {
		c := *p.Command
		c.Command, c.Stdout, c.Stderr = hide(c.Command), hide(c.Stdout), hide(c.Stderr)
		p.Command = &c
	}
	if len(p.Diffs) > 0 {
		diffs := make([]tools.Diff, len(p.Diffs))
		for i, d := range p.Diffs {
			d.Old, d.New = hide(d.Old), hide(d.New)
			diffs[i] = d
		}
		p.Diffs = diffs
	}
	return &p
}

// unavailable explains a call of a tool this task does not offer, naming
// what to use instead (guardrails in code, not only in prompts).
func (x *run) unavailable(name string) string {
	var names []string
	for _, o := range x.offered {
		names = append(names, o.Name())
	}
	msg := fmt.Sprintf("error: tool %q is not available in this %s task; available tools: %s.", name, x.t.spec.Kind, strings.Join(names, ", "))
	if x.t.spec.Kind == KindPlan {
		return msg + " This is a plan task: nothing is written and no command runs until the user executes the plan. Put the change in the plan instead (update_plan items with the files they would change) and name the commands you would run in your answer."
	}
	if name == "run_command" || name == "bash" || name == "shell" {
		msg += " To find files use list_files (recursive, respects .gitignore); to search contents use grep."
	}
	return msg
}

// account applies a result to the task: plan updates, changed files,
// statistics and evidence.
func (x *run) account(c llm.ToolCall, res tools.Result) {
	x.tally(c.Name, res.Duration, res.IsError)
	x.toolTime += res.Duration
	ev := res.Evidence
	if ev == "" {
		ev = tail(res.Text, 800)
	}
	rec := callRecord{Tool: c.Name, Args: c.Arguments, IsError: res.IsError, Evidence: ev}
	searchRecord(&rec, res.Data)
	if res.Present != nil && res.Present.Command != nil {
		// The program as its tool presented it (through the gate).
		x.commands = append(x.commands, *res.Present.Command)
	}
	x.calls = append(x.calls, rec)
	for _, p := range res.Changed {
		x.t.changes.touch(p)
	}
	if res.IsError {
		return
	}
	var plan *tools.Plan
	switch p := res.Data.(type) {
	case *tools.Plan:
		plan = p
	case tools.Plan:
		plan = &p
	}
	if plan != nil {
		cp := copyPlan(*plan)
		// The plan is shown as the model wrote it in every face (progress,
		// the reply, the report): inert, like the answer.
		for i := range cp.Items {
			it := &cp.Items[i]
			it.Text, it.Reason = render.Inert(it.Text), render.Inert(it.Reason)
			files := make([]string, len(it.Files))
			for j, f := range it.Files {
				files[j] = render.Inert(f) // the model's strings, not yet paths
			}
			if it.Files != nil {
				it.Files = files
			}
		}
		x.t.mu.Lock()
		x.t.plan = cp
		x.t.mu.Unlock()
		x.planUpdates++
		x.recordPlan(cp)
		x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventPlan, Plan: &cp})
	}
}

// tally counts one call of tool name in the task's statistics.
func (x *run) tally(name string, d time.Duration, isError bool) {
	st := x.stats[name]
	st.Calls++
	st.Duration += d
	if isError {
		st.Errors++
	}
	x.stats[name] = st
}

// finish ends the task: sets the result, stores a lesson for a failure
// and publishes the result.
func (x *run) finish(status State, reason StopReason, answer string, err error) {
	if cur := x.t.State(); cur.Terminal() {
		return
	}
	if x.text != nil { // what the streams still hold back, before the result
		x.thought.Close()
		x.text.Close()
	}
	// The answer is what every face shows (the reply, the summary, the
	// report, the store's task list): inert from here on. The model's own
	// message in the history stays as it wrote it.
	res := &Result{
		TaskID: x.t.id, Kind: x.t.spec.Kind, Prompt: x.t.spec.Prompt,
		Status: status, StopReason: reason, Answer: render.Inert(answer),
		Files: x.t.changes.list(), Plan: x.t.Plan(), PlanUpdates: x.planUpdates,
		ModelCalls: x.turns, Usage: x.usage, ModelTime: x.modelTime, ToolTime: x.toolTime,
		Duration: time.Since(x.start), Tools: x.stats, Notes: x.notes, Commands: x.commands,
		Instructions: x.instr.files,
	}
	if err != nil {
		res.Error = err.Error()
	}
	if res.Kind == KindPlan {
		res.PlannedFiles = plannedFiles(res.Plan)
	}
	if status == StateCompleted && res.Kind == KindEdit && len(res.Files) == 0 {
		res.Notes = append(res.Notes, "No file was changed by this task.")
	}
	if status == StateCancelled {
		res.Answer = ""
		x.t.sink.cancel()
	}
	x.t.mu.Lock()
	x.t.result = res
	x.t.mu.Unlock()
	if terr := x.t.transition(status); terr != nil {
		// The table has a path to every terminal state from every live
		// state; reaching here is a bug, reported in the result.
		res.Error = strings.TrimSpace(res.Error + "; " + terr.Error())
	}
	// The end, the lesson of a failure and everything before them are
	// committed before the result is published.
	x.finishStore(res)
	x.t.mu.Lock()
	perr := x.t.persistErr
	x.t.mu.Unlock()
	if perr != nil {
		res.Notes = append(res.Notes, "session store: "+perr.Error())
	}
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventResult, Result: res})
}

// lesson writes what a failed task tried and why it failed, in one line.
func (x *run) lesson(res *Result) string {
	var tried []string
	for name, st := range res.Tools {
		tried = append(tried, fmt.Sprintf("%s×%d", name, st.Calls))
	}
	why := res.Error
	if why == "" {
		why = string(res.StopReason)
	}
	if len(x.notes) > 0 {
		why += "; last note: " + firstLine(x.notes[len(x.notes)-1], 160)
	}
	return fmt.Sprintf("%q failed (%s) after %d model call(s), tried %s: %s", clip(res.Prompt, 80), res.StopReason, res.ModelCalls, strings.Join(sortedStrings(tried), ", "), clip(why, 240))
}

// startFromPlan makes the plan a plan task ended with the checklist of the
// edit task that executes it: its items, open again, in the task's plan;
// it returns the text that puts them in the model's context.
func (x *run) startFromPlan(p tools.Plan) string {
	cp := copyPlan(p)
	for i := range cp.Items {
		cp.Items[i].Status, cp.Items[i].Reason = tools.PlanPending, ""
	}
	x.t.mu.Lock()
	x.t.plan = cp
	x.t.mu.Unlock()
	x.recordPlan(cp)
	x.t.sink.emit(Event{TaskID: x.t.id, Kind: EventPlan, Plan: &cp})
	var b strings.Builder
	b.WriteString("Execute the plan of the previous task. Its items are your checklist; mark each done (or skipped, with the reason) with update_plan as you go:\n")
	for _, it := range cp.Items {
		fmt.Fprintf(&b, "- %s: %s", it.ID, it.Text)
		if len(it.Files) > 0 {
			fmt.Fprintf(&b, " (files: %s)", strings.Join(it.Files, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// plannedFiles lists the files of a plan's items, in order, once each.
func plannedFiles(p tools.Plan) []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range p.Items {
		for _, f := range it.Files {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}
