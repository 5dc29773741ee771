package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentls/agentls/cmd/internal/profile"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/server"
)

// runServe serves LSP over stdio. stdout carries only the protocol; logs go
// to stderr and to the log file.
func runServe(ctx context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.err)
	logFile := fs.String("log-file", "", "log file (default: "+server.DefaultLogFile()+"; \"-\" for none)")
	logLevel := fs.String("log-level", "info", "log level of the log file and window/logMessage: debug, info, warn or error")
	stderrLevel := fs.String("stderr-level", "warn", "log level of stderr (editors show stderr as errors and mirror window/logMessage anyway)")
	fs.Bool("stdio", true, "serve over stdin/stdout (the only transport; accepted because many clients pass it)")
	cpuProfile := fs.String("profile.cpu", "", "write a CPU profile of the whole session to this file (go tool pprof reads it)")
	memProfile := fs.String("profile.mem", "", "write a heap profile to this file when the server ends")
	fs.Usage = func() {
		fmt.Fprintf(io.err, "Usage: agentls serve [flags]\n\nServe LSP over stdin/stdout.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(io.err, envHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: err}
	}
	lvl, err := server.ParseLevel(*logLevel)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	level := new(slog.LevelVar)
	level.Set(lvl)
	errLvl, err := server.ParseLevel(*stderrLevel)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	errLevel := new(slog.LevelVar)
	errLevel.Set(errLvl)

	// A write to a closed stdout or stderr pipe (an editor that crashed,
	// or one that closed stderr because it does not read it) must fail
	// with EPIPE rather than raise SIGPIPE, which ends a Go program at once:
	// the server would die mid-task without draining its writes.
	signal.Ignore(syscall.SIGPIPE)
	protect(io)
	limitMemory()
	stop, err := profile.Start(*cpuProfile, *memProfile)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer stop(io.err)

	var writers []ioWriter
	if *logFile != "-" {
		path := *logFile
		if path == "" {
			path = server.DefaultLogFile()
		}
		f, opened, err := server.OpenLogFile(path)
		if err != nil {
			fmt.Fprintf(io.err, "agentls: no log file: %v\n", err)
		} else {
			defer f.Close()
			writers = append(writers, f)
			fmt.Fprintf(io.err, "agentls: logging to %s\n", opened)
		}
	}
	// The agent service: agentls.run/cancel/tasks/showReport, the code
	// actions, the workspace of the editor's roots. When the connection ends
	// it cancels the tasks, kills their commands and drains their writes.
	svc := lsp.NewService(lsp.ServiceOptions{})
	srv := server.New(append([]server.Option{
		server.WithVersion(version),
		server.WithLogger(slog.NewMultiHandler(server.NewLogHandler(errLevel, io.err), server.NewLogHandler(level, writers...)), level),
	}, svc.Options()...)...)
	err = srv.Serve(ctx, stdioConn{in: io.in, out: io.out})
	if errors.Is(err, server.ErrExitWithoutShutdown) {
		return &exitError{code: 1, err: nil}
	}
	return err
}

type ioWriter = io.Writer

// stdioConn joins stdin and stdout into the connection the server reads
// and writes. Close closes stdin when it can be closed, which ends a read
// blocked on it.
type stdioConn struct {
	in  io.Reader
	out io.Writer
}

func (c stdioConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c stdioConn) Write(p []byte) (int, error) { return c.out.Write(p) }

func (c stdioConn) Close() error {
	if f, ok := c.in.(*os.File); ok {
		return f.Close()
	}
	if cl, ok := c.in.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}
