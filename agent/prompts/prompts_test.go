package prompts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadReadsEveryFolderWithPrecedence(t *testing.T) {
	root, user := t.TempDir(), t.TempDir()
	write(t, root, ".agentls/commands/review.md", "---\ndescription: Review a file\nargument-hint: <file>\nmode: ask\n---\nReview $ARGUMENTS for bugs.\n")
	write(t, root, ".claude/commands/review.md", "Claude's review (shadowed)\n")
	write(t, root, ".claude/commands/frontend/component.md", "Write a component named $1 in $2.\n")
	write(t, root, ".github/prompts/explain.prompt.md", "---\nmode: 'agent'\ndescription: \"Explain code\"\n---\nExplain ${selection} to me.\n")
	write(t, root, ".github/prompts/notes.md", "not a prompt file: wrong suffix\n")
	write(t, user, "fix.md", "# Fix the bug\nFix: $ARGUMENTS\n")
	write(t, user, "review.md", "the user's review (shadowed by the workspace)\n")
	secret := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, ".agentls/commands/leak.md")); err != nil {
		t.Fatal(err)
	}

	ps, errs := Load([]string{root}, user)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name+"="+p.Scope)
	}
	if got := strings.Join(names, " "); got != "explain=workspace fix=user frontend:component=workspace review=workspace" {
		t.Fatalf("names = %s", got)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "leak.md") {
		t.Errorf("errors = %v; want the symbolic link out of the workspace refused", errs)
	}
	review, _ := Find(ps, "review")
	if review.Description != "Review a file" || review.ArgumentHint != "<file>" || review.Mode != "ask" || review.Selection {
		t.Errorf("review = %+v", review)
	}
	explain, _ := Find(ps, "explain")
	if explain.Mode != "edit" || explain.Description != "Explain code" || !explain.Selection {
		t.Errorf("explain = %+v; want mode edit (VS Code's agent), the selection used", explain)
	}
	fix, _ := Find(ps, "fix")
	if fix.Description != "Fix the bug" {
		t.Errorf("fix's description = %q; want its first line", fix.Description)
	}
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		body, args, sel, want string
	}{
		{"Review $ARGUMENTS for bugs.", "a.go b.go", "", "Review a.go b.go for bugs."},
		{"Component $1 in $2, not $3.", "Button web", "", "Component Button in web, not ."},
		{"Explain $SELECTION and ${selectedText}.", "", "x := 1", "Explain x := 1 and x := 1."},
		{"Rename to ${input:name:the new name}.", "Foo", "", "Rename to Foo."},
		{"Summarize the changes.", "briefly", "", "Summarize the changes.\n\nARGUMENTS: briefly"},
		{"Summarize the changes.", "", "", "Summarize the changes."},
	} {
		if got := (Prompt{Body: tc.body}).Expand(tc.args, tc.sel); got != tc.want {
			t.Errorf("Expand(%q, %q, %q) = %q; want %q", tc.body, tc.args, tc.sel, got, tc.want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		text, name, args string
		ok               bool
	}{
		{"/review a.go", "review", "a.go", true},
		{"  /frontend:component Button  ", "frontend:component", "Button", true},
		{"/fix\nthe test", "fix", "the test", true},
		{"review a.go", "", "", false},
		{"/usr/bin is empty?", "", "", false},
		{"/ nothing", "", "", false},
	} {
		name, args, ok := Split(tc.text)
		if name != tc.name || args != tc.args || ok != tc.ok {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, %v", tc.text, name, args, ok, tc.name, tc.args, tc.ok)
		}
	}
}
