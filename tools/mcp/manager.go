package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Manager holds the MCP servers of one session host: each configured
// server once (by its configuration), started when a task first needs its
// tools and stopped by Close. Its methods are safe for concurrent use.
type Manager struct {
	log *slog.Logger

	mu      sync.Mutex // guards servers and closed
	servers map[string]*server
	closed  bool

	ctx    context.Context // ends at Close: background starts stop with it
	cancel context.CancelFunc
	bg     sync.WaitGroup // background starts
}

// NewManager returns a manager with no server started; log may be nil.
func NewManager(log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{log: log, servers: map[string]*server{}, ctx: ctx, cancel: cancel}
}

// serversOf returns the server of each configuration, made when new; nil
// once the manager is closed.
func (m *Manager) serversOf(configs []ServerConfig, launch Launch) []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serversLocked(configs, launch)
}

// serversLocked is serversOf with m.mu held.
func (m *Manager) serversLocked(configs []ServerConfig, launch Launch) []*server {
	if m.closed {
		return nil
	}
	srvs := make([]*server, len(configs))
	for i, c := range configs {
		k := c.key()
		s := m.servers[k]
		if s == nil {
			s = &server{cfg: c, launch: launch, log: m.log}
			m.servers[k] = s
		}
		srvs[i] = s
	}
	return srvs
}

// Start starts the servers of configs in the background and lists their
// tools, each within its start timeout (FirstStartTimeout for a first
// start: npx downloads), so that tasks find them ready; it returns at
// once. launch.Progress hears when each starts, launch.Failure how one
// failed. A task that needs a server still starting waits for that start
// (Tools).
func (m *Manager) Start(configs []ServerConfig, launch Launch) {
	m.mu.Lock()
	srvs := m.serversLocked(configs, launch)
	m.bg.Add(len(srvs)) // under mu: never after Close's Wait began
	m.mu.Unlock()
	for _, s := range srvs {
		go func() {
			defer m.bg.Done()
			if _, err := s.list(m.ctx, launch.Progress); err != nil && m.ctx.Err() == nil {
				m.log.Warn("mcp server did not start", "server", s.cfg.Name, "error", err)
				if launch.Failure != nil {
					launch.Failure(err.Error())
				}
			} else if err == nil {
				m.log.Info("mcp server started", "server", s.cfg.Name)
			}
		}()
	}
}

// Close stops every server; later tasks get none.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(s.close)
	}
	wg.Wait()
	m.bg.Wait()
}

// Tools returns the tools of servers for one task, in the servers' order
// and each server's: a server whose list is known gives it without being
// started (it starts on the first call); the others are started and
// asked, all at once, each within its start timeout. A server that
// cannot be listed gives no tools and an error that says why. The list
// is the task's: a server that announces a change
// (notifications/tools/list_changed) is listed again for the next task,
// so the tool definitions of a task, the stable prefix of its requests,
// never change midway. ap asks the user before each call (nil: allowed).
// launch.Progress hears of a start the task waits for, launch.Failure of
// each call that fails for the server's sake (it did not start, ended,
// did not answer); a server that cannot be listed is one of the errors.
func (m *Manager) Tools(ctx context.Context, servers []ServerConfig, launch Launch, ap tools.Approver) ([]tools.Tool, []error) {
	srvs := m.serversOf(servers, launch)
	if srvs == nil {
		return nil, nil
	}
	lists := make([][]*sdk.Tool, len(srvs))
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i, s := range srvs {
		wg.Go(func() { lists[i], errs[i] = s.list(ctx, launch.Progress) })
	}
	wg.Wait()
	var out []tools.Tool
	var problems []error
	seen := map[string]bool{}
	for i, s := range srvs {
		if errs[i] != nil {
			problems = append(problems, errs[i])
			m.log.Warn("mcp server offers no tools", "server", s.cfg.Name, "error", errs[i])
			continue
		}
		list := lists[i]
		if len(list) > MaxTools {
			list = list[:MaxTools]
			problems = append(problems, fmt.Errorf("the MCP server %q offers more than %d tools: only its first %d are offered to the model", s.cfg.Name, MaxTools, MaxTools))
			m.log.Warn("mcp server offers too many tools: the rest are not offered", "server", s.cfg.Name, "offered", MaxTools)
		}
		for _, t := range list {
			name, err := ToolName(s.cfg.Name, t.Name)
			if err == nil && seen[name] {
				err = fmt.Errorf("the tool %q of MCP server %q is offered twice (as %s)", t.Name, s.cfg.Name, name)
			}
			if err != nil {
				problems = append(problems, err)
				continue
			}
			seen[name] = true
			schema, err := inputSchema(t.InputSchema)
			if err != nil {
				problems = append(problems, fmt.Errorf("the tool %q of MCP server %q: %w", t.Name, s.cfg.Name, err))
				m.log.Warn("mcp tool not offered", "server", s.cfg.Name, "tool", t.Name, "error", err)
				continue
			}
			out = append(out, &Tool{name: name, tool: t.Name, srv: s, schema: schema, desc: describe(s.cfg, t), ap: ap, notify: launch.Failure})
		}
	}
	return out, problems
}

// toolChars is what a model API takes in a tool name.
var toolChars = lazyregexp.New(`[^A-Za-z0-9_-]`)

// ToolName is the name the model calls a server's tool by:
// mcp__<server>__<tool>, with characters the model APIs refuse replaced
// by '_'; an error when it is longer than their 64 characters.
func ToolName(server, tool string) (string, error) {
	name := "mcp__" + server + "__" + toolChars.ReplaceAllString(tool, "_")
	if len(name) > 64 {
		return "", fmt.Errorf("the tool %q of MCP server %q is not offered: its name %s is longer than the 64 characters model APIs take", tool, server, name)
	}
	return name, nil
}

// inputSchema is the tool's input schema as JSON, an object schema.
func inputSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if len(b) > maxSchema {
		return nil, fmt.Errorf("its input schema of %d bytes is over the limit of %d bytes (every request carries it): the tool is not offered", len(b), maxSchema)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("input schema is not a JSON object: %s", clip(string(b), 100))
	}
	if t, ok := obj["type"]; ok && t != "object" {
		return nil, fmt.Errorf("input schema has type %v; tools take an object", t)
	}
	if _, ok := obj["type"]; !ok {
		obj["type"] = "object"
		if b, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// maxDescription bounds a tool's description: servers write long ones,
// and every request carries them.
const maxDescription = 2 << 10

func describe(c ServerConfig, t *sdk.Tool) string {
	d := strings.TrimSpace(t.Description)
	if d == "" && t.Annotations != nil {
		d = t.Annotations.Title
	}
	if len(d) > maxDescription {
		d = d[:maxDescription] + " [...]"
	}
	return fmt.Sprintf("%s\n\n(Tool %q of the MCP server %q; each call asks the user unless they allowed it.)", d, t.Name, c.Name)
}

// Tool is one tool of an MCP server, as one task offers it.
type Tool struct {
	name, tool string // mcp__server__tool, and the server's own name of it
	srv        *server
	schema     json.RawMessage
	desc       string
	ap         tools.Approver
	notify     func(string) // hears a call that failed for the server's sake; may be nil
}

func (t *Tool) Name() string            { return t.name }
func (t *Tool) Description() string     { return t.desc }
func (t *Tool) Schema() json.RawMessage { return t.schema }

// ReadOnly is false: what a server's tool does is known only to the
// server (a readOnlyHint is the server's word, not a guarantee).
func (t *Tool) ReadOnly() bool { return false }

// Effects is External: the host wraps tools by what they do.
func (t *Tool) Effects() tools.Effect { return tools.External }

// Present implements tools.Tool: an MCP server says nothing of how its
// calls look, so they get the generic presentation (tools.Describe).
func (t *Tool) Present(json.RawMessage, *tools.Result) tools.Presentation {
	return tools.Presentation{}
}

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// Run asks the user (unless allowed for the task or always), then calls
// the tool. A server that does not start, ends, or does not answer in
// time is an error result the model reads, never a hang.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	var in map[string]any
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &in); err != nil {
			return errResult("the arguments of %s must be a JSON object matching its schema: %v", t.name, err), nil
		}
	}
	if t.ap != nil {
		req := tools.ApprovalRequest{Tool: t.name, Effects: tools.External,
			Summary: fmt.Sprintf("call %s of the MCP server %s with %s", t.tool, t.srv.cfg.Name, clip(oneLine(string(args)), 200))}
		if c, ok := tools.CallFrom(ctx); ok {
			req.CallID, req.Args = c.ID, c.Args
		}
		d, err := t.ap.Approve(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return tools.Result{}, ctx.Err()
			}
			return errResult("could not ask the user to approve %s: %v; it was not done", req.Summary, err), nil
		}
		if d == tools.Deny {
			return errResult("the user denied: %s. It was not done; continue without it (do not ask for the same thing again), or explain in your answer what is needed", req.Summary), nil
		}
	}
	start := time.Now()
	res, err := t.srv.call(ctx, t.tool, in)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		r := errResult("%v", err)
		r.Duration = time.Since(start)
		if t.notify != nil {
			t.notify(err.Error())
		}
		return r, nil
	}
	text := bound(render(res))
	out := tools.Result{Text: text, IsError: res.IsError, Duration: time.Since(start),
		Evidence: fmt.Sprintf("%s(%s)\n%s", t.name, clip(oneLine(string(args)), 200), clip(text, 2000))}
	if res.IsError && !strings.HasPrefix(text, "error") {
		out.Text = "error: " + text
	}
	return out, nil
}

// render is a call result as the model reads it: text as it is, other
// content named.
func render(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text))
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %d bytes of %s, not shown]", c.Resource.URI, len(c.Resource.Blob), c.Resource.MIMEType))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		return "(the tool returned nothing)"
	}
	return strings.Join(parts, "\n")
}

// MaxResultBytes bounds what one call gives the model: its head and its
// tail (where results usually end), with a marker of what was cut.
const MaxResultBytes = 64 << 10

func bound(s string) string {
	if len(s) <= MaxResultBytes {
		return s
	}
	head, tail := MaxResultBytes/4, MaxResultBytes*3/4
	h, tl := s[:head], s[len(s)-tail:]
	// Cut on line ends where there are some, never inside a character.
	if i := strings.LastIndexByte(h, '\n'); i > head/2 {
		h = h[:i+1]
	}
	if i := strings.IndexByte(tl, '\n'); i >= 0 && i < tail/2 {
		tl = tl[i+1:]
	}
	h, tl = strings.ToValidUTF8(h, ""), strings.ToValidUTF8(tl, "")
	return fmt.Sprintf("%s\n[... %d bytes cut: the result was %d bytes; ask the tool for less ...]\n%s", h, len(s)-len(h)-len(tl), len(s), tl)
}

func errResult(format string, a ...any) tools.Result {
	return tools.Result{IsError: true, Text: "error: " + fmt.Sprintf(format, a...)}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// Source names where the tool comes from, for the tools listing:
// "mcp:<server>".
func (t *Tool) Source() string { return "mcp:" + t.srv.cfg.Name }
