package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/agentls/agentls/agent/settings"
)

// runLogin asks for the model service's API key and stores it in the
// user's configuration folder (settings.StoreLogin: mode 0600), where
// every agentls face finds it when the key's environment variable is
// empty. On a terminal the key is read without echo; otherwise the first
// line of stdin is the key. ACP clients run it as `agentls acp login` (a
// terminal auth method).
func runLogin(_ context.Context, io stdio, args []string) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	fs.SetOutput(io.err)
	baseURL := fs.String("base-url", "", "the model service `URL` the key is for (e.g. https://api.example.com/v1); stored with the key, it is a user-level baseURL")
	fs.Usage = func() {
		fmt.Fprintf(io.err, "Usage: agentls login [--base-url URL]\n\nStore the model service's API key (read from the terminal without echo, or the first line of stdin)\nin the user's configuration folder, readable by the user only. The environment variable\n(OPENAI_API_KEY, or the one apiKeyEnv names) wins when it is set.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: err}
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("agentls login takes no arguments (got %q)", fs.Args())}
	}
	var key string
	if f, ok := io.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(io.err, "API key of the model service (not shown): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(io.err)
		if err != nil {
			return fmt.Errorf("login: %w", err)
		}
		key = string(b)
	} else {
		line, err := bufio.NewReader(io.in).ReadString('\n')
		if err != nil && line == "" {
			return &exitError{code: 1, err: fmt.Errorf("login: no key on stdin")}
		}
		key = line
	}
	dir, err := settings.UserDir()
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("login: %w", err)}
	}
	path, err := settings.StoreLogin(dir, settings.Login{APIKey: strings.TrimSpace(key), BaseURL: *baseURL})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("login: %w", err)}
	}
	fmt.Fprintf(io.err, "Stored the API key in %s (readable by you only).\n", path)
	return nil
}
