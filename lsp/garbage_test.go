package lsp_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/lsp/server"
)

// TestGarbageFrames: 1,000 malformed frames never end the connection, and
// each request among them gets an error reply (with its id when it can be
// recovered).
func TestGarbageFrames(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		srv := server.New(server.WithEnv(func(string) string { return "" }))
		serverEnd, clientEnd := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), serverEnd) }()
		frames := lsptest.GarbageFrames(seed, 1000)
		if err := lsptest.ReplayGarbage(clientEnd, clientEnd, frames, 20*time.Second); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		_ = clientEnd.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("seed %d: Serve = %v; want nil (shutdown came first)", seed, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("seed %d: Serve did not end after the input closed", seed)
		}
	}
}

// FuzzIncoming feeds arbitrary bytes to the incoming-message path (framing,
// decoding, lifecycle gating and dispatch) after a valid initialize. The
// server must not crash, must stop when the input ends, and must write only
// well-formed frames.
func FuzzIncoming(f *testing.F) {
	for _, g := range lsptest.GarbageFrames(7, 40) {
		f.Add(g.Bytes)
	}
	f.Add([]byte("Content-Length: 44\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"shutdown\"}"))
	f.Add([]byte("Content-Length: 33\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}"))
	f.Add([]byte("Content-Length: 90\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}}"))
	init := []byte("Content-Length: 96\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":\"initialize\",\"params\":{\"processId\":null,\"capabilities\":{}}}")
	f.Fuzz(func(t *testing.T, data []byte) {
		srv := server.New(server.WithEnv(func(string) string { return "" }),
			server.WithLogger(slog.DiscardHandler, nil), server.WithCommands(cmdEcho, cmdPanic))
		serverEnd, clientEnd := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), serverEnd) }()
		readDone := make(chan error, 1)
		go func() { readDone <- drainFrames(clientEnd) }()
		_, _ = clientEnd.Write(init)
		_, _ = clientEnd.Write(data)
		// End of input: the server must stop.
		if cw, ok := clientEnd.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = clientEnd.Close()
		}
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, server.ErrExitWithoutShutdown) {
				t.Fatalf("Serve = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("server did not stop after the end of input")
		}
		_ = clientEnd.Close()
		if err := <-readDone; err != nil {
			t.Fatalf("server wrote a malformed frame: %v", err)
		}
	})
}
