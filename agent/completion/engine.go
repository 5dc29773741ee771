// Package completion is inline completion as the user types: from a
// document and a cursor it builds the context (the text around the
// cursor, the file's imports, the signatures of the symbols near the
// cursor from the other open documents), passes every byte through the
// context gate (a secret file, or a file the user excluded, sends
// nothing), asks a fill-in-the-middle model (or a chat model with a
// fill-in instruction), and shapes the answer (one line or a block, what
// the text after the cursor already holds removed). A newer request for a
// document cancels the one before, a request waits for the user's pause
// unless the user invoked it, a re-request at the same place is answered
// from a small cache, and an answer for a document that moved on is
// dropped. It knows nothing of editors: a face maps its protocol onto
// Request and Answer.
package completion

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/workspace"
)

// Model is the model a completion asks (*llm.Client).
type Model interface {
	Infill(ctx context.Context, req llm.InfillRequest) (*llm.InfillResult, error)
}

// Gate decides what may reach the model (*ctxgate.Gate): a secret file
// (by name or real target) is never read, and text passes Text.
type Gate interface {
	Secret(name string) bool
	Text(s string) string
}

// Config are the settings of completion.
type Config struct {
	// Model is a fill-in-the-middle model asked at the completions
	// endpoint; "" asks the chat model with a fill-in instruction.
	Model     string
	Timeout   time.Duration // bounds one model call
	MaxTokens int
	// Debounce is the pause an automatic completion waits for.
	Debounce time.Duration
	// Budget bounds the bytes of context sent (default DefaultBudget).
	Budget int
}

// DefaultBudget is the default bound of the context sent, in bytes.
const DefaultBudget = 6000

// Document is an open document.
type Document struct {
	Name       string // absolute file name
	LanguageID string
	Version    int32
	Text       string
}

// Request is one completion at a cursor.
type Request struct {
	Doc      Document
	Position workspace.Position // UTF-16, as LSP counts
	// Invoked: the user asked (a key); otherwise the editor asked as the
	// user typed, and the model is asked only after the pause.
	Invoked bool
}

// Env is what a completion reads besides its document.
type Env struct {
	Model Model
	Gate  Gate
	// Excluded reports the files the user keeps out of the agent's sight
	// (ignore files, outside the workspace): never read.
	Excluded func(name string) bool
	// Others are the other open documents (signatures).
	Others func() []Document
	// Version is the document's current version (false: closed).
	Version func(name string) (int32, bool)
}

// Outcome says what became of a request that has no text.
type Outcome string

// The outcomes.
const (
	Answered   Outcome = "answered"   // Text holds the completion (maybe from the cache)
	Empty      Outcome = "empty"      // the model had nothing to add
	Withheld   Outcome = "withheld"   // a secret or excluded file: nothing sent
	Superseded Outcome = "superseded" // a newer request for the document replaced it
	Moved      Outcome = "moved"      // the document changed while the model worked
)

// Answer is the result of one completion.
type Answer struct {
	Text    string
	Outcome Outcome
	Cached  bool
	// Sent is the bytes of the request body sent to the model (0 when
	// none was); ModelTime the model's time.
	Sent      int
	ModelTime time.Duration
}

// Engine answers the completions of one editor session. It is safe for
// concurrent use.
type Engine struct {
	mu       sync.Mutex
	inflight map[string]*flight // by document name
	cache    cache
}

type flight struct{ cancel context.CancelCauseFunc }

// errSuperseded is the cause of a request cancelled by a newer one.
var errSuperseded = errors.New("superseded by a newer completion request")

// New returns an engine.
func New() *Engine {
	return &Engine{inflight: map[string]*flight{}, cache: cache{max: 64}}
}

// Complete answers req. Cancelling ctx ($/cancelRequest) cancels the model
// call and returns ctx's error at once.
func (e *Engine) Complete(ctx context.Context, cfg Config, env Env, req Request) (Answer, error) {
	doc := req.Doc
	if env.Gate.Secret(doc.Name) || (env.Excluded != nil && env.Excluded(doc.Name)) {
		return Answer{Outcome: Withheld}, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f := &flight{cancel: cancel}
	e.mu.Lock()
	if prev := e.inflight[doc.Name]; prev != nil {
		prev.cancel(errSuperseded)
	}
	e.inflight[doc.Name] = f
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		if e.inflight[doc.Name] == f {
			delete(e.inflight, doc.Name)
		}
		e.mu.Unlock()
	}()

	p, err := BuildPrompt(cfg, env, req)
	if err != nil {
		return Answer{}, err
	}
	ireq := modelRequest(cfg, doc.Name, p)
	key := cacheKey(ireq)
	if text, ok := e.cache.get(key); ok {
		return Answer{Text: text, Outcome: outcomeOf(text), Cached: true}, nil
	}
	if !req.Invoked && cfg.Debounce > 0 {
		t := time.NewTimer(cfg.Debounce)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return done(ctx)
		}
	}
	mctx := ctx
	if cfg.Timeout > 0 {
		var mcancel context.CancelFunc
		mctx, mcancel = context.WithTimeout(ctx, cfg.Timeout)
		defer mcancel()
	}
	res, err := env.Model.Infill(mctx, ireq)
	if ctx.Err() != nil {
		return done(ctx)
	}
	if err != nil {
		return Answer{}, fmt.Errorf("completion: %w", err)
	}
	text := shape(res.Text, p, len(ireq.Messages) > 0)
	e.cache.put(key, text)
	a := Answer{Text: text, Outcome: outcomeOf(text), Sent: res.Sent, ModelTime: res.Duration}
	if env.Version != nil {
		if v, open := env.Version(doc.Name); !open || v != doc.Version {
			a.Text, a.Outcome = "", Moved
		}
	}
	return a, nil
}

// done is the answer of a request whose context ended: superseded (an
// empty answer), or cancelled (ctx's error).
func done(ctx context.Context) (Answer, error) {
	if errors.Is(context.Cause(ctx), errSuperseded) {
		return Answer{Outcome: Superseded}, nil
	}
	return Answer{}, ctx.Err()
}

func outcomeOf(text string) Outcome {
	if text == "" {
		return Empty
	}
	return Answered
}

// BuildPrompt builds the context of req within the budget, every byte
// through the gate: the document's own text, and the signatures found in
// the other open documents that are neither secret nor excluded.
func BuildPrompt(cfg Config, env Env, req Request) (Prompt, error) {
	budget := cfg.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	doc := req.Doc
	off, err := workspace.OffsetOf(doc.Text, req.Position)
	if err != nil {
		return Prompt{}, fmt.Errorf("completion: %w", err)
	}
	prefix, suffix := doc.Text[:off], doc.Text[off:]
	p := Prompt{MultiLine: multiLine(prefix, suffix)}
	rest, _, _ := strings.Cut(suffix, "\n")
	p.RestOfLine = strings.TrimRight(rest, " \t\r")
	for _, l := range strings.Split(firstLines(suffix, 6), "\n")[1:] {
		if t := strings.TrimSpace(l); t != "" {
			p.NextLine = t
			break
		}
	}

	headMax := budget / 4
	var head strings.Builder
	c := commentPrefix(doc.Name, doc.LanguageID)
	head.WriteString(c + "Path: " + baseName(doc.Name) + "\n")
	body := budget - headMax
	pre, suf, cut := window(prefix, suffix, body*3/4, body/4)
	if cut {
		if imp := imports(doc.Text, headMax/2); imp != "" {
			head.WriteString(commented(c, imp))
		}
	}
	want := nearIdentifiers(pre, suf)
	found := map[string]bool{}
	// Names declared in the window need no signature.
	for _, m := range declRE.FindAllStringSubmatch(pre+suf, -1) {
		found[m[1]] = true
	}
	var sigs strings.Builder
	room := func() int { return headMax - head.Len() - sigs.Len() }
	if cut {
		sigs.WriteString(signatures(doc.Text, want, found, room()))
	}
	if env.Others != nil {
		for _, o := range env.Others() {
			if room() <= 0 {
				break
			}
			if o.Name == doc.Name || env.Gate.Secret(o.Name) || (env.Excluded != nil && env.Excluded(o.Name)) {
				continue
			}
			sigs.WriteString(signatures(o.Text, want, found, room()))
		}
	}
	if sigs.Len() > 0 {
		head.WriteString(commented(c, sigs.String()))
	}
	p.Header = env.Gate.Text(head.String())
	p.Prefix = env.Gate.Text(pre)
	p.Suffix = env.Gate.Text(suf)
	return p, nil
}

func baseName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		return name[i+1:]
	}
	return name
}

// chatInstruction is the system message of a completion asked of a chat
// model.
const chatInstruction = "You are a code completion engine inside an editor. The user message is a file with the marker <CURSOR> where the cursor is. " +
	"Reply with exactly the text to insert at <CURSOR>: no explanation, no markdown fence, nothing of the text before or after the cursor repeated."

// modelRequest is the model call of p.
func modelRequest(cfg Config, name string, p Prompt) llm.InfillRequest {
	stop := []string{"\n"}
	if p.MultiLine {
		stop = []string{"\n\n\n"}
	}
	r := llm.InfillRequest{Model: cfg.Model, MaxTokens: cfg.MaxTokens}
	if cfg.Model != "" {
		r.Prompt, r.Suffix, r.Stop = p.Header+p.Prefix, p.Suffix, stop
		return r
	}
	shape := "Insert at most one line (the rest of the cursor's line)."
	if p.MultiLine {
		shape = "Insert the lines that complete the block the cursor starts."
	}
	r.Messages = []llm.Message{
		{Role: llm.RoleSystem, Content: chatInstruction + " " + shape},
		{Role: llm.RoleUser, Content: p.Header + p.Prefix + "<CURSOR>" + p.Suffix},
	}
	return r
}

// shape turns the model's text into the completion: a chat answer's fence
// removed, one line unless the context takes a block, and what the text
// after the cursor already holds (the rest of the line, the closing line
// of the block) cut off the end.
func shape(text string, p Prompt, chat bool) string {
	if chat {
		text = unfence(text)
	}
	text = strings.TrimRight(text, " \t\r\n")
	if !p.MultiLine {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			if strings.TrimSpace(text[:i]) == "" && chat {
				text = strings.TrimLeft(text, "\r\n")
				if j := strings.IndexByte(text, '\n'); j >= 0 {
					text = text[:j]
				}
			} else {
				text = text[:i]
			}
		}
		if p.RestOfLine != "" {
			text = strings.TrimSuffix(text, p.RestOfLine)
		}
		return strings.TrimRight(text, "\r")
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 1 && p.NextLine != "" && strings.TrimSpace(lines[len(lines)-1]) == p.NextLine {
		lines = lines[:len(lines)-1]
	}
	return strings.TrimRight(strings.Join(lines, "\n"), " \t\r\n")
}

// unfence removes a markdown code fence around a chat answer.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") {
		return text
	}
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	} else {
		return ""
	}
	t = strings.TrimRight(t, " \t\r\n")
	t = strings.TrimSuffix(t, "```")
	return t
}

// cacheKey identifies a model call by what it sends.
func cacheKey(r llm.InfillRequest) [32]byte {
	h := sha256.New()
	for _, s := range []string{r.Model, r.Prompt, r.Suffix, strings.Join(r.Stop, "\x00"), fmt.Sprint(r.MaxTokens)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, m := range r.Messages {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// cache keeps the last answers by what their call sent.
type cache struct {
	mu    sync.Mutex
	max   int
	order [][32]byte
	m     map[[32]byte]string
}

func (c *cache) get(k [32]byte) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *cache) put(k [32]byte, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]string{}
	}
	if _, ok := c.m[k]; ok {
		c.m[k] = v
		return
	}
	if len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.order = append(c.order, k)
	c.m[k] = v
}
