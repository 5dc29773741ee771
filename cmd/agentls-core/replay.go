package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/llm/recorder"
)

// runReplay turns a flight recording into a fake-model script.
func runReplay(_ context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.err)
	out := fs.String("o", "", "write the script to `FILE` instead of stdout")
	failures := fs.Bool("failures", false, "replay failed attempts (HTTP errors, Retry-After) too")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: agentls replay RECORDING.jsonl [-o script.json] [-failures]")
		fs.PrintDefaults()
	}
	// Flags may come before or after the file name.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return &exitError{code: 2}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("want exactly one recording file")}
	}
	xs, err := recorder.ReadFile(files[0])
	if err != nil {
		return err
	}
	script := fakemodel.FromExchanges(xs, *failures)
	if len(script.Turns) == 0 {
		return fmt.Errorf("%s: no model answers to replay", files[0])
	}
	b, err := script.Marshal()
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = io.out.Write(b)
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(io.err, "agentls replay: %d turns from %d calls written to %s\n", len(script.Turns), len(xs), *out)
	return nil
}
