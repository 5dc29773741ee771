package langserver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A default server that runs another program (gopls runs go) is not taken
// when that program is missing: the error names it, instead of a server
// that starts and answers "no views".
func TestDefaultServerWithoutTheProgramItRunsIsNotTaken(t *testing.T) {
	bin := t.TempDir()
	exe := func(name string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe("gopls")
	t.Setenv("PATH", bin)
	root := t.TempDir()
	p := NewPool(0)
	_, err := p.config(languageOf("main.go"), []string{root})
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "the go command it runs is not on agentls's PATH") {
		t.Fatalf("gopls without go: got %v, want an error naming go", err)
	}
	exe("go")
	t.Setenv("PATH", bin+string(os.PathListSeparator)) // a new PATH value: no cached lookup
	c, err := p.config(languageOf("main.go"), []string{root})
	if err != nil || c.Command != "gopls" {
		t.Fatalf("gopls with go: got %+v, %v", c, err)
	}
}
