package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentls/agentls/lsp"
)

// handle answers the server's requests and records its notifications.
// Notifications are handled in arrival order on the read loop; requests
// that may wait release it first.
func (c *Client) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if c.cfg.Strict {
		if err := c.strictCheck(req); err != nil {
			return nil, err
		}
	}
	switch req.Method() {
	case protocol.MethodProgress:
		var p protocol.ProgressParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			c.violation("malformed $/progress: %v", err)
			return nil, nil
		}
		c.progress(&p)
		return nil, nil
	case protocol.MethodWindowShowMessage:
		var p protocol.ShowMessageParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			c.violation("malformed window/showMessage: %v", err)
			return nil, nil
		}
		c.update(func(s *State) { s.ShowMessages = append(s.ShowMessages, p) })
		return nil, nil
	case lsp.MethodAnswer:
		var p lsp.AnswerParams
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			c.violation("malformed %s: %v", lsp.MethodAnswer, err)
			return nil, nil
		}
		c.update(func(s *State) { s.Answers = append(s.Answers, AnswerPart{AnswerParams: p, Time: time.Now()}) })
		return nil, nil
	case protocol.MethodTextDocumentPublishDiagnostics:
		var p protocol.PublishDiagnosticsParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			c.violation("malformed textDocument/publishDiagnostics: %v", err)
			return nil, nil
		}
		c.update(func(s *State) {
			if s.Diagnostics == nil {
				s.Diagnostics = map[string]protocol.PublishDiagnosticsParams{}
			}
			s.Diagnostics[string(p.URI)] = p
			s.Publications++
		})
		return nil, nil
	case protocol.MethodWindowLogMessage:
		var p protocol.LogMessageParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			c.violation("malformed window/logMessage: %v", err)
			return nil, nil
		}
		c.update(func(s *State) { s.LogMessages = append(s.LogMessages, p) })
		return nil, nil
	case protocol.MethodWindowWorkDoneProgressCreate:
		var p protocol.WorkDoneProgressCreateParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		c.update(func(s *State) { s.CreateRequests++ })
		switch c.cfg.Create {
		case CreateIgnore:
			jsonrpc2.Async(ctx)
			<-c.closing
			return nil, jsonrpc2.NewError(jsonrpc2.InternalError, "client closing")
		case CreateFail:
			return nil, jsonrpc2.NewError(jsonrpc2.InternalError, "progress not wanted")
		}
		c.mu.Lock()
		c.created[tokenName(p.Token)] = true
		c.mu.Unlock()
		return nil, nil
	case protocol.MethodWindowShowMessageRequest:
		jsonrpc2.Async(ctx)
		var p protocol.ShowMessageRequestParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		c.update(func(s *State) { s.MessageRequests = append(s.MessageRequests, p) })
		if c.cfg.ShowMessageRequest == nil {
			return nil, nil
		}
		return c.cfg.ShowMessageRequest(p), nil
	case protocol.MethodWindowShowDocument:
		var p protocol.ShowDocumentParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		c.update(func(s *State) { s.ShowDocuments = append(s.ShowDocuments, p) })
		return &protocol.ShowDocumentResult{Success: c.cfg.ShowDocument}, nil
	case "agentls/diagnostics":
		if c.cfg.Diagnostics == nil {
			break
		}
		var p struct {
			URIs []string `json:"uris"`
		}
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		type doc struct {
			URI         string                `json:"uri"`
			Version     *int32                `json:"version,omitempty"`
			Diagnostics []protocol.Diagnostic `json:"diagnostics"`
			Checked     *bool                 `json:"checked,omitempty"`
		}
		out := []doc{}
		for _, u := range p.URIs {
			if c.cfg.DiagnosticsUnchecked != nil && c.cfg.DiagnosticsUnchecked(u) {
				no := false
				out = append(out, doc{URI: u, Diagnostics: []protocol.Diagnostic{}, Checked: &no})
				continue
			}
			text, version, ok := c.Document(uri.URI(u).FsPath())
			if !ok {
				continue
			}
			ds := c.cfg.Diagnostics(u, text, version)
			if ds == nil {
				ds = []protocol.Diagnostic{}
			}
			d := doc{URI: u, Diagnostics: ds}
			if !c.cfg.DiagnosticsUnversioned {
				d.Version = &version
			}
			out = append(out, d)
		}
		return out, nil
	case "agentls/lsp":
		if c.cfg.LSP == nil {
			break
		}
		jsonrpc2.Async(ctx) // the editor's server may take a while
		var p struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		c.update(func(s *State) { s.Forwarded = append(s.Forwarded, p.Method) })
		res, err := c.cfg.LSP(p.Method, p.Params)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, nil
		}
		return jsonrpc2.RawMessage(res), nil
	case "agentls/saveDocuments":
		if !c.cfg.SaveDocuments {
			break
		}
		jsonrpc2.Async(ctx) // it sends didSave back
		var p struct {
			URIs []string `json:"uris"`
		}
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		c.update(func(s *State) { s.SaveRequests = append(s.SaveRequests, p.URIs) })
		if c.cfg.BeforeSave != nil {
			c.cfg.BeforeSave()
		}
		saved := []string{}
		type failure struct {
			URI    string `json:"uri"`
			Reason string `json:"reason"`
		}
		failed := []failure{}
		for _, u := range p.URIs {
			if err := c.SaveDocument(ctx, uri.URI(u).FsPath()); err != nil {
				failed = append(failed, failure{u, err.Error()})
				continue
			}
			saved = append(saved, u)
		}
		return map[string]any{"saved": saved, "failed": failed}, nil
	case protocol.MethodWorkspaceApplyEdit:
		jsonrpc2.Async(ctx) // it sends didChange back
		var p protocol.ApplyWorkspaceEditParams
		if err := protocol.Unmarshal(req.Params(), &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%v", err)
		}
		if c.cfg.BeforeApplyEdit != nil {
			c.cfg.BeforeApplyEdit(&p)
		}
		res := c.applyEdit(ctx, &p)
		c.update(func(s *State) { s.AppliedEdits = append(s.AppliedEdits, AppliedEdit{Params: p, Result: res}) })
		return &res, nil
	}
	if req.IsCall() {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "lsptest: %s not supported", req.Method())
	}
	return nil, nil
}

// tokenName names a progress token: a string as is, an integer as "#N".
func tokenName(t protocol.ProgressToken) string {
	switch t := t.(type) {
	case protocol.String:
		return string(t)
	case protocol.Integer:
		return fmt.Sprintf("#%d", int32(t))
	}
	return fmt.Sprintf("%v", t)
}

// progress records a $/progress notification and checks its sequence.
func (c *Client) progress(p *protocol.ProgressParams) {
	name := tokenName(p.Token)
	c.mu.Lock()
	created := c.created[name]
	c.mu.Unlock()
	if !created {
		c.violation("$/progress for token %q that the client never created", name)
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := protocol.Unmarshal(p.Value, &kind); err != nil {
		c.violation("$/progress %q: malformed value: %v", name, err)
		return
	}
	now := timeNow()
	c.update(func(s *State) {
		rec, ok := s.Progress[name]
		if !ok {
			rec = &ProgressRecord{Token: name}
			s.Progress[name] = rec
			s.ProgressOrder = append(s.ProgressOrder, name)
		}
		switch kind.Kind {
		case "begin":
			var v protocol.WorkDoneProgressBegin
			if err := protocol.Unmarshal(p.Value, &v); err != nil || rec.Begin != nil {
				c.violations = append(c.violations, fmt.Sprintf("$/progress %q: second or malformed begin (%v)", name, err))
				return
			}
			rec.Begin = &v
		case "report":
			var v protocol.WorkDoneProgressReport
			if err := protocol.Unmarshal(p.Value, &v); err != nil || rec.Begin == nil || rec.End != nil {
				c.violations = append(c.violations, fmt.Sprintf("$/progress %q: report outside begin..end or malformed (%v)", name, err))
				return
			}
			rec.Reports = append(rec.Reports, v)
			rec.ReportTimes = append(rec.ReportTimes, now)
		case "end":
			var v protocol.WorkDoneProgressEnd
			if err := protocol.Unmarshal(p.Value, &v); err != nil || rec.Begin == nil || rec.End != nil {
				c.violations = append(c.violations, fmt.Sprintf("$/progress %q: end without begin, second end or malformed (%v)", name, err))
				return
			}
			rec.End = &v
		default:
			c.violations = append(c.violations, fmt.Sprintf("$/progress %q: unknown kind %q", name, kind.Kind))
		}
	})
}

// applyEdit applies a workspace edit to the client's documents, all or
// nothing, checking versions, and tells the server with didChange.
func (c *Client) applyEdit(ctx context.Context, p *protocol.ApplyWorkspaceEditParams) protocol.ApplyWorkspaceEditResult {
	type fileEdit struct {
		filename string
		version  *int32
		edits    []protocol.TextEdit
	}
	var files []fileEdit
	confirmable, kept := 0, 0
	for _, dc := range p.Edit.DocumentChanges {
		tde, ok := dc.(*protocol.TextDocumentEdit)
		if !ok {
			return failed(fmt.Sprintf("lsptest does not apply %T", dc))
		}
		name, err := filenameOf(tde.TextDocument.URI)
		if err != nil {
			return failed(err.Error())
		}
		fe := fileEdit{filename: name, version: tde.TextDocument.Version}
		for _, e := range tde.Edits {
			switch e := e.(type) {
			case *protocol.TextEdit:
				fe.edits = append(fe.edits, *e)
			case *protocol.AnnotatedTextEdit:
				a, ok := p.Edit.ChangeAnnotations[e.AnnotationID]
				if !ok {
					return failed(fmt.Sprintf("annotation %q is not in changeAnnotations", e.AnnotationID))
				}
				if a.NeedsConfirmation != nil && *a.NeedsConfirmation {
					confirmable++
					if c.cfg.Review != nil && !c.cfg.Review(e.AnnotationID, a) {
						continue
					}
					kept++
				}
				fe.edits = append(fe.edits, e.TextEdit)
			default:
				return failed(fmt.Sprintf("lsptest does not apply %T", e))
			}
		}
		files = append(files, fe)
	}
	for u, edits := range p.Edit.Changes {
		name, err := filenameOf(u)
		if err != nil {
			return failed(err.Error())
		}
		files = append(files, fileEdit{filename: name, edits: edits})
	}
	if confirmable > 0 && kept == 0 {
		return protocol.ApplyWorkspaceEditResult{Applied: false}
	}

	type result struct {
		filename string
		text     string
		ordered  []protocol.TextEdit
		version  int32
	}
	var results []result
	// A file the editor does not have open is loaded from disk, as Neovim,
	// Emacs and VS Code do: it is opened (didOpen, version 1) with what the
	// disk holds, and the edit applies to it. A versioned edit must name an
	// open document.
	var loaded []string
	for _, fe := range files {
		if _, _, ok := c.Document(fe.filename); ok || fe.version != nil {
			continue
		}
		data, err := os.ReadFile(fe.filename)
		if err != nil {
			return failed(fmt.Sprintf("%s cannot be loaded: %v", fe.filename, err))
		}
		if err := c.OpenDocument(ctx, fe.filename, languageOf(fe.filename), string(data)); err != nil {
			return failed(fmt.Sprintf("%s cannot be opened: %v", fe.filename, err))
		}
		loaded = append(loaded, fe.filename)
	}
	if len(loaded) > 0 {
		c.update(func(s *State) { s.Loaded = append(s.Loaded, loaded...) })
	}
	c.mu.Lock()
	for _, fe := range files {
		doc, ok := c.docs[fe.filename]
		if !ok {
			c.mu.Unlock()
			return failed(fmt.Sprintf("%s is not open in the editor", fe.filename))
		}
		if fe.version != nil && *fe.version != doc.version {
			c.mu.Unlock()
			return failed(fmt.Sprintf("version mismatch for %s: edit is for version %d, document is at version %d", fe.filename, *fe.version, doc.version))
		}
		text, ordered, err := applyTextEdits(doc.text, fe.edits)
		if err != nil {
			c.mu.Unlock()
			return failed(fmt.Sprintf("%s: %v", fe.filename, err))
		}
		results = append(results, result{fe.filename, text, ordered, doc.version + 1})
	}
	for _, r := range results {
		if len(r.ordered) == 0 {
			continue
		}
		c.docs[r.filename].text = r.text
		c.docs[r.filename].version = r.version
	}
	c.mu.Unlock()
	for _, r := range results {
		if len(r.ordered) == 0 {
			continue // nothing kept in this file: no change
		}
		events := make([]protocol.TextDocumentContentChangeEvent, len(r.ordered))
		for i, e := range r.ordered {
			events[i] = &protocol.TextDocumentContentChangePartial{Range: e.Range, Text: e.NewText}
		}
		_ = c.Notify(ctx, protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
			TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: FileURI(r.filename)}, Version: r.version},
			ContentChanges: events,
		})
	}
	return protocol.ApplyWorkspaceEditResult{Applied: true}
}

func failed(reason string) protocol.ApplyWorkspaceEditResult {
	return protocol.ApplyWorkspaceEditResult{Applied: false, FailureReason: &reason}
}

// languageOf is the language id an editor gives a file it loads.
func languageOf(filename string) string {
	switch filepath.Ext(filename) {
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".ts":
		return "typescript"
	case ".js":
		return "javascript"
	case ".rs":
		return "rust"
	}
	return "plaintext"
}
