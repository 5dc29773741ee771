// Package server is the agentls language server's protocol side: JSON-RPC over a byte stream
// (stdio in production, in-memory pipes in tests), the LSP lifecycle,
// document sync into a workspace.Buffers store, a typed command registry,
// a work-done progress tracker, logging mirrored to the client, and the
// server configuration.
//
// The server runs its own handler chain on go.lsp.dev/jsonrpc2 rather than
// protocol.NewServer, because the stock chain handles notifications
// concurrently (document edits could apply out of order), lets a handler
// panic or a notification error kill the connection, and stops reading at
// the first malformed frame. Here:
//
//   - notifications run in arrival order on the read loop;
//   - requests call jsonrpc2.Async and run concurrently;
//   - $/cancelRequest cancels the named request's context;
//   - a panicking handler becomes an InternalError reply and a log line;
//   - malformed frames are answered with an error and skipped (lsp/wire).
//
// Server-to-client requests (workDoneProgress/create, applyEdit,
// showMessageRequest) may only be made from request handlers, never from a
// notification handler: the read loop would be blocked waiting for its own
// reply.
package server
