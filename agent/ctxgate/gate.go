// Package ctxgate is the context gate: every byte agentls sends to the
// model passes it. It decides secrecy by where text comes from and by what
// it is, never by the name a caller used:
//
//   - by target: a file whose real target (every symbolic link on the way
//     resolved) is a secret file (tools.SecretTarget) is withheld, whatever
//     name reached it: a tool result quoting it (its Files), an instruction
//     file, a prompt file. A tool result is let through only for the secret
//     files the user allowed that very call to read (tools.Consent).
//   - by value: every configured secret (redact.Redactor: the API key, MCP
//     server env values and headers from every source, hook env, secret
//     environment variables) and every secret of a known shape (provider
//     key prefixes, private key blocks, signed tokens).
//   - by content: the values of dotenv-style assignments whose names mark
//     secrets (API_TOKEN=..., export DB_PASSWORD=...), in whatever file or
//     output they appear (Assignments).
//
// The agent loop applies Request to every model request it sends and
// Result to every tool result as it arrives; instructions and prompt files
// go through File.
package ctxgate

import (
	"strings"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/tools"
)

// Gate is the context gate of one workspace and one set of secrets. Its
// zero value hides secrets of a known shape and dotenv secrets by content;
// it knows no files.
type Gate struct {
	root string
	red  redact.Redactor
}

// New returns the gate of the workspace at root ("" for none) hiding the
// secrets red knows.
func New(root string, red redact.Redactor) *Gate {
	return &Gate{root: root, red: red}
}

// Secret reports whether the file name (workspace-relative as printed, or
// absolute) is secret by its name or by its real target.
func (g *Gate) Secret(name string) bool {
	if g.root == "" {
		return tools.SecretFile(name)
	}
	return tools.SecretTarget(g.root, name)
}

// Text returns s as the model may read it: configured secrets, secrets of
// a known shape and dotenv secret values hidden.
func (g *Gate) Text(s string) string {
	return Assignments(g.red.String(s))
}

// File returns the text of the file name as the model may read it, or
// ok false when the file is secret by name or target and is withheld whole
// (an AGENTS.md -> .env, a prompt file linked to a key).
func (g *Gate) File(name, text string) (string, bool) {
	if g.Secret(name) {
		return "", false
	}
	return g.Text(text), true
}

// Withheld is the text that stands for a file the gate withheld.
func Withheld(name string) string {
	return "[withheld: " + name + " is or links to a file that commonly holds secrets; agentls does not send it to the model]"
}

// Result returns res as the model may read it, and whether the gate hid or
// withheld anything. A result that quotes a secret file (its Files, by
// target) that consent does not allow is withheld whole: its text names
// the files and says why, its evidence and data are dropped. Otherwise its
// text and evidence pass Text.
func (g *Gate) Result(res tools.Result, consent *tools.Consent) (tools.Result, bool) {
	var secret []string
	for _, f := range res.Files {
		if g.Secret(f) && !consent.Allowed(f) {
			secret = append(secret, f)
		}
	}
	if len(secret) > 0 {
		res.Text = "error: the result was withheld: it quotes " + strings.Join(secret, ", ") +
			", which is or links to a file that commonly holds secrets. agentls does not send such a file's content to the model unless the user allows reading it (read_file with its path asks); continue without it."
		res.IsError = true
		res.Evidence = ""
		res.Data = nil
		return res, true
	}
	text := g.Text(res.Text)
	hid := text != res.Text
	res.Text = text
	res.Evidence = g.Text(res.Evidence)
	return res, hid
}

// Request returns req with the content of every message and the
// description of every tool passed through Text: the last step before the
// model, whatever built the message.
func (g *Gate) Request(req llm.Request) llm.Request {
	msgs := make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content = g.Text(m.Content)
		msgs[i] = m
	}
	req.Messages = msgs
	if len(req.Tools) > 0 {
		defs := make([]llm.ToolDef, len(req.Tools))
		for i, d := range req.Tools {
			d.Description = g.Text(d.Description) // an MCP server's words
			defs[i] = d
		}
		req.Tools = defs
	}
	return req
}
