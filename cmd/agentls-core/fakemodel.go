package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/agentls/agentls/agent/llm/fakemodel"
)

// runFakeModel serves a scripted OpenAI-compatible model until ctx ends. The
// first line on stdout is the base URL; logs go to stderr.
func runFakeModel(ctx context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("fake-model", flag.ContinueOnError)
	fs.SetOutput(io.err)
	script := fs.String("script", "", "script `FILE` (JSON, JSON lines, or a .txtar archive)")
	section := fs.String("section", "model.json", "txtar section holding the script")
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if *script == "" || fs.NArg() > 0 {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("usage: agentls fake-model --script FILE [--addr 127.0.0.1:0]")}
	}
	s, err := fakemodel.LoadScript(*script, *section)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(io.err, nil))
	srv, err := fakemodel.Listen(*addr, s, logger)
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := fmt.Fprintln(io.out, srv.URL()); err != nil {
		return err
	}
	logger.Info("fake model serving", "url", srv.URL(), "turns", len(s.Turns))
	<-ctx.Done()
	return nil
}
