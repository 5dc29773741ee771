package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/agent/session"
)

// TestStoreFolderIsIgnored: opening the session store (the first thing an
// editor's folder does) creates .agentls/ with its own .gitignore, so git
// and Source Control never list agentls.db and its journal files.
func TestStoreFolderIsIgnored(t *testing.T) {
	root := t.TempDir()
	h := session.New(session.Defaults(), session.Options{Getenv: func(string) string { return "" }})
	defer h.Close()
	h.SetRoots([]string{root})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.Store(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".agentls", "agentls.db")); err != nil {
		t.Fatalf("the store is not in .agentls: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(root, ".agentls", ".gitignore"))
	if err != nil || !strings.Contains(string(b), "\n*\n") {
		t.Errorf(".agentls/.gitignore = %q, %v; want one that ignores everything (*)", b, err)
	}
}
