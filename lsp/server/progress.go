package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/protocol"
)

// ReportInterval is the minimum time between two progress reports of one
// piece of work (at most 10 a second). A report that comes sooner is held
// and sent when its slot comes, replaced by any later one: the last state
// is never lost.
const ReportInterval = 100 * time.Millisecond

// Tracker reports work-done progress to the client, gopls style: it uses
// the client's token when the request carried one, else creates a token
// with window/workDoneProgress/create when the client declared
// window.workDoneProgress (waiting at most the create timeout, 1 s by
// default, since some clients never answer), else falls back to
// window/showMessage at begin and end. window/workDoneProgress/cancel
// cancels work started as cancellable.
type Tracker struct {
	s    *Server
	next atomic.Int64

	mu      sync.Mutex        // guards cancels
	cancels map[string]func() // by tokenKey, cancellable work in flight
}

func newTracker(s *Server) *Tracker {
	return &Tracker{s: s, cancels: map[string]func(){}}
}

// WorkDone is one piece of work reported to the client, from Start to End.
// Its methods are safe for concurrent use; after End they do nothing.
type WorkDone struct {
	t     *Tracker
	ctx   context.Context // never cancelled: progress is sent even after the request ends
	token protocol.ProgressToken
	title string

	mu       sync.Mutex // guards the fields below and orders the notifications
	lastSent time.Time
	pending  *protocol.WorkDoneProgressReport
	timer    *time.Timer
	ended    bool
}

// Start begins reporting work titled title. token is the client's
// workDoneToken (nil when it gave none). When cancel is non-nil the work is
// shown as cancellable and window/workDoneProgress/cancel calls it. Start
// must be called from a request handler (it may wait for the client's
// answer to window/workDoneProgress/create), never from a notification
// handler.
func (t *Tracker) Start(ctx context.Context, token protocol.ProgressToken, title, message string, cancel func()) *WorkDone {
	ctx = context.WithoutCancel(ctx)
	title, message = t.s.Redact(title), t.s.Redact(message)
	wd := &WorkDone{t: t, ctx: ctx, title: title}
	if token == nil && t.s.supportsWorkDoneProgress() {
		token = protocol.String(fmt.Sprintf("agentls-%d", t.next.Add(1)))
		cctx, stop := context.WithTimeout(ctx, t.s.createTimeout)
		err := t.s.client.WorkDoneProgressCreate(cctx, &protocol.WorkDoneProgressCreateParams{Token: token})
		stop()
		if err != nil {
			t.s.log.Warn("window/workDoneProgress/create failed; falling back to window/showMessage", "error", err)
			token = nil
		}
	}
	if token == nil {
		text := title
		if message != "" {
			text += ": " + message
		}
		t.s.ShowMessage(ctx, protocol.MessageTypeInfo, text)
		wd.token = nil
		return wd
	}
	wd.token = token
	begin := &protocol.WorkDoneProgressBegin{Kind: "begin", Title: title}
	if message != "" {
		begin.Message = &message
	}
	if cancel != nil {
		begin.Cancellable = ptr(true)
		t.mu.Lock()
		t.cancels[tokenKey(token)] = cancel
		t.mu.Unlock()
	}
	wd.mu.Lock()
	wd.send(begin)
	wd.mu.Unlock()
	return wd
}

// Token is the progress token, nil when progress falls back to messages.
func (wd *WorkDone) Token() protocol.ProgressToken { return wd.token }

// Report reports message and, when percentage is in [0, 100], the
// percentage done. Reports are throttled to one per ReportInterval; the
// latest held report is sent when its slot comes (or just before End).
func (wd *WorkDone) Report(message string, percentage int) {
	if wd.token == nil {
		return
	}
	message = wd.t.s.Redact(message)
	r := &protocol.WorkDoneProgressReport{Kind: "report", Message: &message}
	if percentage >= 0 && percentage <= 100 {
		r.Percentage = ptr(uint32(percentage))
	}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.ended {
		return
	}
	wait := ReportInterval - time.Since(wd.lastSent)
	if wait <= 0 && wd.pending == nil {
		wd.send(r)
		return
	}
	wd.pending = r
	if wd.timer == nil {
		wd.timer = time.AfterFunc(max(wait, 0), wd.flush)
	}
}

// flush sends the held report; it runs on the throttle timer.
func (wd *WorkDone) flush() {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	wd.timer = nil
	if wd.ended || wd.pending == nil {
		return
	}
	wait := ReportInterval - time.Since(wd.lastSent)
	if wait > 0 { // the timer fired early: wait for the slot
		wd.timer = time.AfterFunc(wait, wd.flush)
		return
	}
	wd.send(wd.pending)
	wd.pending = nil
}

// End ends the work with a final message: a held report is sent first (in
// its slot), then the end. In the message fallback the end is a
// window/showMessage.
func (wd *WorkDone) End(message string) {
	message = wd.t.s.Redact(message)
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.ended {
		return
	}
	wd.ended = true
	if wd.timer != nil {
		wd.timer.Stop()
		wd.timer = nil
	}
	if wd.token == nil {
		text := wd.title
		if message != "" {
			text += ": " + message
		}
		wd.t.s.ShowMessage(wd.ctx, protocol.MessageTypeInfo, text)
		return
	}
	if wd.pending != nil {
		if wait := ReportInterval - time.Since(wd.lastSent); wait > 0 {
			time.Sleep(wait) // rate limit: at most one report per interval
		}
		wd.send(wd.pending)
		wd.pending = nil
	}
	end := &protocol.WorkDoneProgressEnd{Kind: "end"}
	if message != "" {
		end.Message = &message
	}
	wd.send(end)
	wd.t.mu.Lock()
	delete(wd.t.cancels, tokenKey(wd.token))
	wd.t.mu.Unlock()
}

// send sends one $/progress value. wd.mu must be held.
func (wd *WorkDone) send(value any) {
	raw, err := protocol.Marshal(value)
	if err != nil {
		wd.t.s.log.Error("encode progress", "error", err)
		return
	}
	wd.lastSent = time.Now()
	wd.t.s.notify(wd.ctx, func(ctx context.Context, c protocol.Client) error {
		return c.Progress(ctx, &protocol.ProgressParams{Token: wd.token, Value: protocol.LSPAny(raw)})
	})
}

// cancel runs the cancel function of the work with token, if any.
func (t *Tracker) cancel(token protocol.ProgressToken) bool {
	t.mu.Lock()
	f, ok := t.cancels[tokenKey(token)]
	t.mu.Unlock()
	if ok {
		f()
	}
	return ok
}

func tokenKey(t protocol.ProgressToken) string {
	switch t := t.(type) {
	case protocol.Integer:
		return fmt.Sprintf("i:%d", int32(t))
	case protocol.String:
		return "s:" + string(t)
	}
	return fmt.Sprintf("?:%v", t)
}

func (s *Server) supportsWorkDoneProgress() bool {
	caps := s.ClientCapabilities()
	return s.client != nil && caps.Window != nil && caps.Window.WorkDoneProgress != nil && *caps.Window.WorkDoneProgress
}

func (s *Server) workDoneProgressCancel(_ context.Context, p *protocol.WorkDoneProgressCancelParams) error {
	if !s.progress.cancel(p.Token) {
		s.log.Debug("window/workDoneProgress/cancel for unknown or finished work", "token", tokenKey(p.Token))
	}
	return nil
}
