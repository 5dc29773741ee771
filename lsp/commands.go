package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// Names of the agentls commands (the public contract; their handlers are
// registered by the packages that implement them).
const (
	CommandRun        = "agentls.run"
	CommandCancel     = "agentls.cancel"
	CommandTasks      = "agentls.tasks"
	CommandShowReport = "agentls.showReport"
	CommandResume     = "agentls.resume"
	CommandUndo       = "agentls.undo"
)

// CommandHandler is one entry of the command registry. The only
// implementation is *Command[A], so every command has typed arguments.
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

// Command is a workspace/executeCommand command whose argument is one JSON
// object decoded into A (unknown fields are an error). When A or *A has a
// method Validate() error, it is called after decoding. Bad arguments are
// answered with InvalidParams naming the command and what it expects.
type Command[A any] struct {
	Name string
	// Expect describes the argument object for error messages, e.g.
	// `{"prompt": string, "mode"?: "ask"|"edit"}`.
	Expect string
	// Run runs the command. ctx ends when the client cancels the request
	// ($/cancelRequest) or the connection ends. The result is the reply.
	Run func(ctx context.Context, inv *Invocation, args A) (any, error)
}

// CommandName implements CommandHandler.
func (c *Command[A]) CommandName() string { return c.Name }

// Decode decodes the arguments of an executeCommand request into A.
func (c *Command[A]) Decode(args []protocol.LSPAny) (A, error) {
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

func (c *Command[A]) argError(err error) error {
	msg := fmt.Sprintf("%s: invalid argument: %v", c.Name, strings.TrimPrefix(err.Error(), "json: "))
	if c.Expect != "" {
		msg += "; expected " + c.Expect
	}
	return jsonrpc2.NewError(jsonrpc2.InvalidParams, msg)
}

// New builds a protocol.Command that runs this command with args, for code
// actions and the like, so a command name is never a loose string.
func (c *Command[A]) New(title string, args A) (protocol.Command, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return protocol.Command{}, fmt.Errorf("encode %s arguments: %w", c.Name, err)
	}
	return protocol.Command{Title: title, Command: c.Name, Arguments: []protocol.LSPAny{protocol.LSPAny(raw)}}, nil
}

func (c *Command[A]) run(ctx context.Context, inv *Invocation, args []protocol.LSPAny) (any, error) {
	a, err := c.Decode(args)
	if err != nil {
		return nil, err
	}
	return c.Run(ctx, inv, a)
}

// commandRegistry holds the commands by name.
type commandRegistry struct {
	mu     sync.RWMutex // guards byName
	byName map[string]CommandHandler
}

func newCommandRegistry() *commandRegistry {
	return &commandRegistry{byName: map[string]CommandHandler{}}
}

func (r *commandRegistry) add(c CommandHandler) {
	r.mu.Lock()
	r.byName[c.CommandName()] = c
	r.mu.Unlock()
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
	return c.run(ctx, &Invocation{Server: s, WorkDoneToken: p.WorkDoneToken}, p.Arguments)
}

func (s *Server) codeAction(ctx context.Context, p *protocol.CodeActionParams) ([]protocol.CommandOrCodeAction, error) {
	if s.codeActions == nil {
		return []protocol.CommandOrCodeAction{}, nil
	}
	return s.codeActions(ctx, s, p)
}
