package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/workspace/ownfs"
)

// LogFileName is the name of the server's log file in its log directory.
const LogFileName = "agentls.log"

// DefaultLogFile is where the server logs when no --log-file is given:
// agentls's state folder ($XDG_STATE_HOME/agentls, else
// ~/.local/state/agentls), a folder no confined command, language server
// or MCP server can write; without a home folder, the private
// $TMPDIR/agentls-<uid>.
func DefaultLogFile() string {
	dir := ownfs.StateHome(os.Getenv)
	if dir == "" {
		dir = filepath.Join(ownfs.TempBase(os.Getenv), ownfs.TempName())
	}
	return filepath.Join(dir, LogFileName)
}

// OpenLogFile opens path for appending, creating its folder, without
// following a link at the file's name (and, for DefaultLogFile, at any
// name below the user's state folder). When that fails it falls back to
// the private temporary folder (ownfs.Private: 0700, ours, not a link);
// the returned path is the file actually opened. A fallback that is not
// private is refused: no log rather than a log elsewhere.
func OpenLogFile(path string) (*os.File, string, error) {
	var d *ownfs.Dir
	var err error
	if path == DefaultLogFile() {
		var why error
		d, why, err = ownfs.OpenState(os.Getenv)
		if why != nil && err == nil {
			why = fmt.Errorf("%s: %w", path, why)
		}
		if err != nil {
			return nil, "", errors.Join(why, err)
		}
	} else {
		d, err = userLogDir(path)
		if err != nil {
			var ferr error
			if d, ferr = ownfs.Private(ownfs.TempBase(os.Getenv), ownfs.TempName()); ferr != nil {
				return nil, "", errors.Join(err, ferr)
			}
		}
	}
	defer d.Close()
	name := LogFileName
	if path != DefaultLogFile() && d.Path() == filepath.Clean(filepath.Dir(path)) {
		name = filepath.Base(path)
	}
	f, err := d.OpenFile(name, logFlags, 0o600)
	if err == nil {
		return f, filepath.Join(d.Path(), name), nil
	}
	tmp, terr := ownfs.Private(ownfs.TempBase(os.Getenv), ownfs.TempName())
	if terr != nil {
		return nil, "", errors.Join(err, terr)
	}
	defer tmp.Close()
	if tmp.Path() == d.Path() {
		return nil, "", fmt.Errorf("open log file: %w", err)
	}
	if f, terr = tmp.OpenFile(LogFileName, logFlags, 0o600); terr != nil {
		return nil, "", errors.Join(err, terr)
	}
	return f, filepath.Join(tmp.Path(), LogFileName), nil
}

const logFlags = os.O_CREATE | os.O_WRONLY | os.O_APPEND

// userLogDir opens the folder of a log file the user named, creating it.
func userLogDir(path string) (*ownfs.Dir, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	return ownfs.Open(filepath.Dir(path), "", false, 0)
}

// NewLogHandler returns a handler writing text records at level or above to
// every writer in ws (stderr and the log file in production).
func NewLogHandler(level *slog.LevelVar, ws ...io.Writer) slog.Handler {
	hs := make([]slog.Handler, 0, len(ws))
	for _, w := range ws {
		if w != nil {
			hs = append(hs, slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
		}
	}
	return slog.NewMultiHandler(hs...)
}

// teeHandler sends each record to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errA, errB error
	if t.a.Enabled(ctx, r.Level) {
		errA = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		errB = t.b.Handle(ctx, r)
	}
	return errors.Join(errA, errB)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}

// clientLogHandler mirrors records to the client as window/logMessage. It
// sends nothing before attach or after detach.
type clientLogHandler struct {
	level *slog.LevelVar
	core  *clientLogCore
	attrs []slog.Attr
	group string
}

// clientLogCore is the connection state shared by a handler and its
// WithAttrs/WithGroup children.
type clientLogCore struct {
	mu     sync.Mutex // guards ctx and client
	ctx    context.Context
	client protocol.Client
}

func newClientLogHandler(level *slog.LevelVar) *clientLogHandler {
	return &clientLogHandler{level: level, core: &clientLogCore{}}
}

func (h *clientLogHandler) attach(ctx context.Context, c protocol.Client) {
	h.core.mu.Lock()
	h.core.ctx, h.core.client = context.WithoutCancel(ctx), c
	h.core.mu.Unlock()
}

func (h *clientLogHandler) detach() {
	h.core.mu.Lock()
	h.core.client = nil
	h.core.mu.Unlock()
}

func (h *clientLogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *clientLogHandler) Handle(_ context.Context, r slog.Record) error {
	h.core.mu.Lock()
	c, ctx := h.core.client, h.core.ctx
	h.core.mu.Unlock()
	if c == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) || a.Key == "stack" {
			return true
		}
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		fmt.Fprintf(&b, " %s=%v", key, a.Value.Resolve())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	return c.LogMessage(ctx, &protocol.LogMessageParams{Type: messageType(r.Level), Message: b.String()})
}

func (h *clientLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

func messageType(l slog.Level) protocol.MessageType {
	switch {
	case l >= slog.LevelError:
		return protocol.MessageTypeError
	case l >= slog.LevelWarn:
		return protocol.MessageTypeWarning
	case l >= slog.LevelInfo:
		return protocol.MessageTypeInfo
	}
	return protocol.MessageTypeLog
}

// redactHandler hides secrets in a record's message and string values
// before any handler (log file, stderr, window/logMessage) sees it.
type redactHandler struct {
	next   slog.Handler
	redact func(string) string
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.redact(err.Error()))
		}
		return slog.String(a.Key, h.redact(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{h.next.WithAttrs(out), h.redact}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.next.WithGroup(name), h.redact}
}
