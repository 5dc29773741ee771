package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// CommandHandler is one entry of the command registry. The only
// implementation is *Command[A, R], so every command has typed arguments
// and a typed result.
type CommandHandler interface {
	// CommandName is the name clients pass to workspace/executeCommand.
	CommandName() string
	run(ctx context.Context, inv *Invocation, args []protocol.LSPAny) (any, error)
}

// Invocation is what a running command knows about the request that ran it.
type Invocation struct {
	Server *Server
	// WorkDoneToken is the client's progress token, nil when it gave none;
	// pass it to Server.Progress().Start.
	WorkDoneToken protocol.ProgressToken
}

// Command declares one workspace/executeCommand command: its name, its
// argument type A (one JSON object, unknown fields refused; when A or *A
// has a method Validate() error it is called after decoding) and its result
// type R (the reply, encoded with its json tags). Bad arguments are answered
// with InvalidParams naming the command and what it expects, a text derived
// from A (see expectOf).
type Command[A, R any] struct {
	Name string
	// Run runs the command. ctx ends when the client cancels the request
	// ($/cancelRequest) or the connection ends.
	Run func(ctx context.Context, inv *Invocation, args A) (R, error)
}

// CommandName implements CommandHandler.
func (c *Command[A, R]) CommandName() string { return c.Name }

// Expect describes the argument object, for error messages and docs.
func (c *Command[A, R]) Expect() string { return expectOf(reflect.TypeFor[A]()) }

// Decode decodes the arguments of an executeCommand request into A.
func (c *Command[A, R]) Decode(args []protocol.LSPAny) (A, error) {
	var a A
	switch len(args) {
	case 0:
		args = []protocol.LSPAny{protocol.LSPAny("{}")}
	case 1:
	default:
		return a, c.argError(fmt.Errorf("takes one argument object, got %d arguments", len(args)))
	}
	raw := bytes.TrimSpace(args[0])
	if len(raw) == 0 || raw[0] != '{' {
		return a, c.argError(errors.New("the argument must be a JSON object"))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, c.argError(err)
	}
	var v any = &a
	if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return a, c.argError(err)
		}
	}
	return a, nil
}

func (c *Command[A, R]) argError(err error) error {
	msg := fmt.Sprintf("%s: invalid argument: %v; expected %s", c.Name, strings.TrimPrefix(err.Error(), "json: "), c.Expect())
	return jsonrpc2.NewError(jsonrpc2.InvalidParams, msg)
}

// New builds a protocol.Command that runs this command with args, for code
// actions and the like, so a command name is never a loose string.
func (c *Command[A, R]) New(title string, args A) (protocol.Command, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return protocol.Command{}, fmt.Errorf("encode %s arguments: %w", c.Name, err)
	}
	return protocol.Command{Title: title, Command: c.Name, Arguments: []protocol.LSPAny{protocol.LSPAny(raw)}}, nil
}

func (c *Command[A, R]) run(ctx context.Context, inv *Invocation, args []protocol.LSPAny) (any, error) {
	a, err := c.Decode(args)
	if err != nil {
		return nil, err
	}
	r, err := c.Run(ctx, inv, a)
	if err != nil {
		return nil, err
	}
	// encoding/json, so the reply's shape is exactly R's json tags.
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s reply: %w", c.Name, err)
	}
	return json.RawMessage(b), nil
}

// Types returns the Go types of the command's arguments and reply: the
// editor contract (lsp/contract.go) describes them.
func (c *Command[A, R]) Types() (args, reply reflect.Type) {
	return reflect.TypeFor[A](), reflect.TypeFor[R]()
}

// expectOf describes the JSON object a struct type decodes from:
// `{"prompt": string, "mode"?: "ask"|"edit"}`. A field's `expect` tag
// replaces its type's description; omitempty fields are optional (?).
func expectOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return JSONKind(t)
	}
	var parts []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		opt := ""
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			opt = "?"
		}
		desc := f.Tag.Get("expect")
		if desc == "" {
			desc = JSONKind(f.Type)
		}
		parts = append(parts, fmt.Sprintf("%q%s: %s", name, opt, desc))
	}
	if len(parts) == 0 {
		return "no argument, or {}"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// jsonKind names the JSON value a Go type decodes from.
func JSONKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return JSONKind(t.Elem()) + "[]"
	case reflect.Map:
		return "object"
	case reflect.Struct:
		if t.Name() != "" {
			return t.Name()
		}
		return "object"
	}
	return "any"
}

// commandRegistry holds the commands by name.
type commandRegistry struct {
	mu     sync.RWMutex // guards byName
	byName map[string]CommandHandler
}

func newCommandRegistry() *commandRegistry {
	return &commandRegistry{byName: map[string]CommandHandler{}}
}

// add registers c; a second handler for a name already registered is a
// programming error, reported instead of silently replacing the first.
func (r *commandRegistry) add(c CommandHandler) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[c.CommandName()]; dup {
		return fmt.Errorf("command %s is registered twice", c.CommandName())
	}
	r.byName[c.CommandName()] = c
	return nil
}

func (r *commandRegistry) get(name string) (CommandHandler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.byName[name]
	return c, ok
}

func (r *commandRegistry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (s *Server) executeCommand(ctx context.Context, p *protocol.ExecuteCommandParams) (any, error) {
	c, ok := s.commands.get(p.Command)
	if !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "unknown command %q (known: %s)", p.Command, strings.Join(s.commands.names(), ", "))
	}
	s.log.Debug("executeCommand", "command", p.Command)
	res, err := c.run(ctx, &Invocation{Server: s, WorkDoneToken: p.WorkDoneToken}, p.Arguments)
	if raw, ok := res.(json.RawMessage); ok && s.redactor != nil {
		res = json.RawMessage(s.redactor().JSON(raw))
	}
	if err != nil {
		err = redactErr(err, s.Redact)
	}
	return res, err
}

func (s *Server) codeAction(ctx context.Context, p *protocol.CodeActionParams) ([]protocol.CommandOrCodeAction, error) {
	if s.codeActions == nil {
		return []protocol.CommandOrCodeAction{}, nil
	}
	return s.codeActions(ctx, s, p)
}

// hoverRequest answers textDocument/hover with the hover function, for a
// client that was offered hover; its text passes the redactor.
func (s *Server) hoverRequest(ctx context.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
	s.mu.Lock()
	offered := s.hovers
	s.mu.Unlock()
	if !offered {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not found: %s", protocol.MethodTextDocumentHover)
	}
	h, err := s.hover(ctx, s, p)
	if err != nil || h == nil {
		return nil, err
	}
	if m, ok := h.Contents.(*protocol.MarkupContent); ok && m != nil {
		h.Contents = &protocol.MarkupContent{Kind: m.Kind, Value: s.Redact(m.Value)}
	}
	return h, nil
}

// redactErr hides secrets in an error's text, keeping a JSON-RPC error's
// code.
func redactErr(err error, redact func(string) string) error {
	var rpc *jsonrpc2.Error
	if errors.As(err, &rpc) {
		return jsonrpc2.NewError(rpc.Code, redact(rpc.Message))
	}
	if msg := redact(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}
