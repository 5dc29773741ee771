package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/tools"
)

// The client's buffer is the truth. When the client offers
// fs/read_text_file, every read of a file by read_file and every edit
// (edit_file, write_file, an undo) starts from the text the client answers,
// unsaved changes included; the client is asked at the moment of the read,
// never ahead of time for every file (a client may show each read as a
// permission). Searches (grep, list_files) and commands see the disk.

type sessionKey struct{}

// clientReads is the ACP session whose turn ctx belongs to, and whether
// every read of the workspace asks the client (an undo) rather than only
// those of the file tools.
type clientReads struct {
	session string
	all     bool
}

// withClientReads marks ctx as a turn of session id.
func withClientReads(ctx context.Context, id string, all bool) context.Context {
	return context.WithValue(ctx, sessionKey{}, clientReads{session: id, all: all})
}

// clientFileTools are the tools whose reads ask the client: they read or
// replace one file's text.
var clientFileTools = map[string]bool{"read_file": true, "edit_file": true, "write_file": true}

// readClient is the workspace's ClientReader of this connection: the
// client's text of filename, when the read belongs to a file tool of an
// ACP turn (or an undo) and the client offers fs/read_text_file. A client
// error (no such file, a refused read) falls back to the disk.
func (a *Agent) readClient(ctx context.Context, filename string) (string, bool) {
	cr, ok := ctx.Value(sessionKey{}).(clientReads)
	if !ok || !a.capabilities().Fs.ReadTextFile {
		return "", false
	}
	if !cr.all {
		c, ok := tools.CallFrom(ctx)
		if !ok || !clientFileTools[c.Tool] {
			return "", false
		}
	}
	resp, err := a.peer().ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(cr.session), Path: filename})
	if err != nil {
		a.log.Debug("fs/read_text_file failed: reading the disk", "path", filename, "error", err)
		return "", false
	}
	return resp.Content, true
}
