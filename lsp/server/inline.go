package server

import (
	"context"
	"encoding/json"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// LSP 3.18 inline completion, which go.lsp.dev/protocol predates: the
// types of textDocument/inlineCompletion, here and nowhere else.

// MethodTextDocumentInlineCompletion is the inline completion request.
const MethodTextDocumentInlineCompletion = "textDocument/inlineCompletion"

// InlineCompletionTriggerKind says why the editor asks.
type InlineCompletionTriggerKind int

// The trigger kinds.
const (
	// InlineCompletionInvoked: the user asked (a key, a command).
	InlineCompletionInvoked InlineCompletionTriggerKind = 1
	// InlineCompletionAutomatic: the editor asks as the user types.
	InlineCompletionAutomatic InlineCompletionTriggerKind = 2
)

// InlineCompletionParams are the parameters of
// textDocument/inlineCompletion.
type InlineCompletionParams struct {
	TextDocument protocol.TextDocumentIdentifier `json:"textDocument"`
	Position     protocol.Position               `json:"position"`
	Context      InlineCompletionContext         `json:"context"`
}

// InlineCompletionContext is why and where the editor asks.
type InlineCompletionContext struct {
	TriggerKind InlineCompletionTriggerKind `json:"triggerKind"`
	// SelectedCompletionInfo is the item selected in the completion
	// widget, when one is shown.
	SelectedCompletionInfo *SelectedCompletionInfo `json:"selectedCompletionInfo,omitempty"`
}

// SelectedCompletionInfo is the completion item the user has selected.
type SelectedCompletionInfo struct {
	Range protocol.Range `json:"range"`
	Text  string         `json:"text"`
}

// InlineCompletionList is the result of textDocument/inlineCompletion.
type InlineCompletionList struct {
	Items []InlineCompletionItem `json:"items"`
}

// InlineCompletionItem is one completion: InsertText replaces Range (the
// cursor, when absent).
type InlineCompletionItem struct {
	InsertText string          `json:"insertText"`
	FilterText string          `json:"filterText,omitempty"`
	Range      *protocol.Range `json:"range,omitempty"`
}

// InlineCompletionFunc answers textDocument/inlineCompletion. It runs
// concurrently with later messages, with a context that $/cancelRequest
// cancels.
type InlineCompletionFunc func(ctx context.Context, s *Server, p *InlineCompletionParams) (*InlineCompletionList, error)

// WithInlineCompletion sets the function that answers
// textDocument/inlineCompletion, and enabled, which says whether the user
// turned it on (read at initialize, and after every settings change). The
// server declares inlineCompletionProvider at initialize when enabled;
// turned on later, it registers the method with client/registerCapability
// when the client takes dynamic registration for it, and unregisters it
// when turned off. A request while it is off gets an empty list.
func WithInlineCompletion(f InlineCompletionFunc, enabled func() bool) Option {
	return func(s *Server) { s.inline.f, s.inline.enabled = f, enabled }
}

// inlineState is the server's inline completion offer.
type inlineState struct {
	f       InlineCompletionFunc
	enabled func() bool

	mu         sync.Mutex
	dynamic    bool // the client registers inlineCompletion dynamically
	static     bool // declared in the initialize result
	registered bool // registered with client/registerCapability
}

// inlineRegistrationID is the id of the dynamic registration.
const inlineRegistrationID = "agentls.inlineCompletion"

// inlineClientCaps is the part of the client's capabilities
// go.lsp.dev/protocol does not decode.
type inlineClientCaps struct {
	Capabilities struct {
		TextDocument struct {
			InlineCompletion *struct {
				DynamicRegistration bool `json:"dynamicRegistration"`
			} `json:"inlineCompletion"`
		} `json:"textDocument"`
	} `json:"capabilities"`
}

// on reports whether inline completion is configured and turned on.
func (st *inlineState) on() bool { return st.f != nil && st.enabled != nil && st.enabled() }

// initializeRoute answers initialize, adding inlineCompletionProvider to
// the capabilities when inline completion is on.
func (s *Server) initializeRoute() route {
	return route{sync: true, handle: func(ctx context.Context, raw jsonrpc2.RawMessage) (any, error) {
		p, err := decodeParams[protocol.InitializeParams](protocol.MethodInitialize, raw)
		if err != nil {
			return nil, err
		}
		var caps inlineClientCaps
		_ = json.Unmarshal(raw, &caps)
		ic := caps.Capabilities.TextDocument.InlineCompletion
		s.inline.mu.Lock()
		s.inline.dynamic = ic != nil && ic.DynamicRegistration
		s.inline.mu.Unlock()
		res, err := s.initialize(ctx, p)
		if err != nil || !s.inline.on() {
			return res, err
		}
		s.inline.mu.Lock()
		s.inline.static = true
		s.inline.mu.Unlock()
		b, err := protocol.Marshal(res)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		var capm map[string]json.RawMessage
		if err := json.Unmarshal(m["capabilities"], &capm); err != nil {
			return nil, err
		}
		capm["inlineCompletionProvider"] = json.RawMessage("true")
		if m["capabilities"], err = json.Marshal(capm); err != nil {
			return nil, err
		}
		out, err := json.Marshal(m)
		return json.RawMessage(out), err
	}}
}

// syncInlineRegistration registers or unregisters inline completion with
// the client after a settings change, when the client registers it
// dynamically and the initialize result did not declare it. It runs on
// the read loop: the request goes out in the background.
func (s *Server) syncInlineRegistration(ctx context.Context) {
	st := &s.inline
	if st.f == nil || lifecycle(s.state.Load()) != stateInitialized || s.client == nil {
		return
	}
	on := st.on()
	st.mu.Lock()
	if st.static || !st.dynamic || on == st.registered {
		st.mu.Unlock()
		return
	}
	st.registered = on
	st.mu.Unlock()
	c := s.client
	ctx = context.WithoutCancel(ctx)
	go func() {
		var err error
		if on {
			err = c.RegisterCapability(ctx, &protocol.RegistrationParams{Registrations: []protocol.Registration{{
				ID: inlineRegistrationID, Method: MethodTextDocumentInlineCompletion, RegisterOptions: protocol.LSPAny(`{}`),
			}}})
		} else {
			err = c.UnregisterCapability(ctx, &protocol.UnregistrationParams{Unregisterations: []protocol.Unregistration{{
				ID: inlineRegistrationID, Method: MethodTextDocumentInlineCompletion,
			}}})
		}
		if err != nil {
			s.log.Warn("inline completion registration failed", "register", on, "error", err)
		}
	}()
}

// inlineCompletion answers textDocument/inlineCompletion.
func (s *Server) inlineCompletion(ctx context.Context, p *InlineCompletionParams) (*InlineCompletionList, error) {
	if !s.inline.on() {
		return &InlineCompletionList{Items: []InlineCompletionItem{}}, nil
	}
	return s.inline.f(ctx, s, p)
}
