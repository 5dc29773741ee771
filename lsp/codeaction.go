package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentls/agentls/lsp/server"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/workspace"
)

// Titles of the agent code actions (public contract).
const (
	TitleAskAbout   = "Ask agent about `%s`"
	TitleExplain    = "Explain selection with agent"
	TitleFixPrefix  = "Fix with agent: "
	TitlePlanPrefix = "Plan with agent: "
	maxTitleMessage = 80
)

// codeActions answers textDocument/codeAction from the open buffer only:
// no model call, no disk read. It offers "Ask agent about `SYMBOL`" for the
// identifier at the cursor (or the selected identifier), "Explain selection
// with agent" and the custom commands that use the selection
// (promptActions) for a non-empty range, and one "Fix with agent: MESSAGE"
// quick fix per diagnostic of the request's context; on an instruction
// comment ("// agent: ..."), "Run agent on this comment".
func (s *Service) codeActions(_ context.Context, srv *server.Server, p *protocol.CodeActionParams) ([]protocol.CommandOrCodeAction, error) {
	out := []protocol.CommandOrCodeAction{}
	name, err := server.Filename(p.TextDocument.URI)
	if err != nil {
		return out, nil
	}
	doc, ok := srv.Buffers().Get(name)
	if !ok {
		return out, nil
	}
	r := workspace.Range{
		Start: workspace.Position{Line: p.Range.Start.Line, Character: p.Range.Start.Character},
		End:   workspace.Position{Line: p.Range.End.Line, Character: p.Range.End.Character},
	}
	u := string(p.TextDocument.URI)
	literals := server.LiteralCodeActions(srv.ClientCapabilities())
	want := func(kind protocol.CodeActionKind) bool {
		if len(p.Context.Only) == 0 {
			return true
		}
		for _, k := range p.Context.Only {
			if k == kind || strings.HasPrefix(string(kind), string(k)+".") {
				return true
			}
		}
		return false
	}
	add := func(title string, kind protocol.CodeActionKind, args RunArgs, diags []protocol.Diagnostic) {
		if !want(kind) {
			return
		}
		cmd, err := RunCommand.New(title, args)
		if err != nil {
			return
		}
		if !literals {
			out = append(out, &cmd)
			return
		}
		ca := &protocol.CodeAction{Title: title, Command: cmd, Diagnostics: diags}
		if kind != "" {
			k := kind
			ca.Kind = &k
		}
		out = append(out, ca)
	}

	// An instruction comment ("// agent: ...") under the cursor: the action
	// that runs it (commentcmd.go), first, since it is what the user wrote
	// the comment for.
	if cmd, ok := commentActions(doc, u, r); ok && want(protocol.CodeActionKindEmpty) {
		if literals {
			out = append(out, &protocol.CodeAction{Title: cmd.Title, Command: cmd})
		} else {
			out = append(out, &cmd)
		}
	}

	start, err1 := workspace.OffsetOf(doc.Text, r.Start)
	end, err2 := workspace.OffsetOf(doc.Text, r.End)
	if err1 == nil && err2 == nil && end >= start {
		if sym := symbolAt(doc.Text, start, end); sym != "" {
			rr := r
			add(fmt.Sprintf(TitleAskAbout, sym), protocol.CodeActionKindEmpty, RunArgs{
				Prompt: fmt.Sprintf("Explain `%s`: what it is, what it does, and where it is defined and used.", sym),
				Mode:   "ask", URI: u, Range: &rr,
			}, nil)
		}
		if end > start {
			rr := r
			add(TitleExplain, protocol.CodeActionKindEmpty, RunArgs{
				Prompt: "Explain the selected code: what it does and why.",
				Mode:   "ask", URI: u, Range: &rr,
			}, nil)
			for _, a := range s.promptActions(u, r) {
				add(a.title, protocol.CodeActionKindEmpty, a.args, nil)
			}
		}
	}
	for _, d := range p.Context.Diagnostics {
		if src, _ := d.Source.Get(); src == server.ServerName {
			continue // agentls's own note on an instruction comment: nothing to fix
		}
		arg, msg := diagnosticArg(d)
		if msg == "" {
			continue
		}
		rr := arg.Range
		add(TitleFixPrefix+cutLine(msg, maxTitleMessage), protocol.CodeActionKindQuickFix, RunArgs{
			Prompt:      "Fix this problem: " + msg,
			Mode:        "edit",
			URI:         u,
			Range:       &rr,
			Diagnostics: []DiagnosticArg{arg},
		}, []protocol.Diagnostic{d})
		add(TitlePlanPrefix+cutLine(msg, maxTitleMessage), protocol.CodeActionKindQuickFix, RunArgs{
			Prompt:      "Plan how to fix this problem: " + msg,
			Mode:        "plan",
			URI:         u,
			Range:       &rr,
			Diagnostics: []DiagnosticArg{arg},
		}, []protocol.Diagnostic{d})
	}
	return out, nil
}

// diagnosticArg converts an LSP diagnostic for agentls.run, and returns its
// message as text.
func diagnosticArg(d protocol.Diagnostic) (DiagnosticArg, string) {
	var msg string
	switch m := d.Message.(type) {
	case protocol.String:
		msg = string(m)
	case *protocol.MarkupContent:
		if m != nil {
			msg = m.Value
		}
	}
	raw, _ := json.Marshal(msg)
	arg := DiagnosticArg{
		Range: workspace.Range{
			Start: workspace.Position{Line: d.Range.Start.Line, Character: d.Range.Start.Character},
			End:   workspace.Position{Line: d.Range.End.Line, Character: d.Range.End.Character},
		},
		Severity: int(d.Severity),
		Message:  raw,
	}
	if src, ok := d.Source.Get(); ok {
		arg.Source = src
	}
	if d.Code != nil {
		if b, err := protocol.Marshal(d.Code); err == nil {
			arg.Code = b
		}
	}
	return arg, strings.TrimSpace(msg)
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// symbolAt is the identifier the range [start, end) of text names: the
// selected text when it is one identifier, else the identifier under (or
// just before) the cursor at start. "" when there is none.
func symbolAt(text string, start, end int) string {
	if end > start {
		sel := strings.TrimSpace(text[start:end])
		if strings.ContainsAny(sel, " \t\n") {
			return ""
		}
		// A selection inside an identifier names the whole identifier (ALE
		// sends the character under the cursor as the range).
		start += len(text[start:end]) - len(strings.TrimLeft(text[start:end], " \t\n"))
	}
	lo, hi := start, start
	for lo > 0 {
		r, n := utf8.DecodeLastRuneInString(text[:lo])
		if !isIdentRune(r) {
			break
		}
		lo -= n
	}
	for hi < len(text) {
		r, n := utf8.DecodeRuneInString(text[hi:])
		if !isIdentRune(r) {
			break
		}
		hi += n
	}
	if sym := text[lo:hi]; isIdent(sym) && !keywords[sym] {
		return sym
	}
	return ""
}

// keywords are words no one asks about as a symbol: Go's keywords and the
// common keywords of the other languages editors open (Python, JavaScript /
// TypeScript, Rust, C/C++, Java). symbolAt never names one, so the code
// action "Ask agent about `func`" is not offered.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		break case chan const continue default defer else fallthrough for func go goto if
		import interface map package range return select struct switch type var
		and as assert async await class def del elif except finally from global in is
		lambda nonlocal not or pass raise try while with yield None True False
		catch delete do export extends function instanceof let new this throw typeof void
		null undefined true false enum implements private protected public static super
		fn impl let mut pub use mod crate self Self trait where loop match ref unsafe dyn move
		auto char double extern float int long register short signed sizeof unsigned union
		volatile namespace template typename virtual
		abstract boolean byte final native synchronized throws transient`) {
		m[w] = true
	}
	return m
}()

// isIdent reports whether s is one identifier that does not start with a
// digit.
func isIdent(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i, r := range s {
		if !isIdentRune(r) || (i == 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}
