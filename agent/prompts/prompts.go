// Package prompts reads custom commands: Markdown prompt files that become
// commands in every face (/name args in ACP, entries of the plugins' task
// pickers, code actions on a selection). They are read from, in order of
// precedence (the first file of a name wins):
//
//   - <root>/.agentls/commands/**/*.md (agentls's own)
//   - <root>/.claude/commands/**/*.md (Claude Code's)
//   - <root>/.github/prompts/*.prompt.md (VS Code Copilot's prompt files)
//   - the user's folder, os.UserConfigDir()/agentls/commands/**/*.md
//
// A file in a subfolder is named folder:name, as Claude Code names it. The
// front matter's description and argument-hint describe the command;
// mode (ask, edit, plan; VS Code's agent is edit) picks the task's mode.
// The body is the prompt: $ARGUMENTS (and $1..$9, word by word; VS Code's
// ${input:...}) become the command's arguments, $SELECTION (VS Code's
// ${selection} and ${selectedText}) the editor's selection. A prompt file
// is only text for the model: it runs nothing, so a workspace's files
// need no consent (what the model then does goes through the approvals
// as any prompt's work does).
package prompts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// MaxBytes bounds a prompt file; a larger one is skipped with an error.
const MaxBytes = 256 << 10

// Prompt is one custom command.
type Prompt struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint,omitempty"`
	Mode         string `json:"mode,omitempty"` // ask | edit | plan; "": decided from the prompt
	// Source is the file, relative to its folder's root ("<root>/..." for
	// the workspace, "~user/..." style absolute path for the user's).
	Source string `json:"source"`
	Scope  string `json:"scope"` // "workspace" | "user"
	// Selection: the body uses the editor's selection, so the command is
	// offered as a code action on a selection.
	Selection bool   `json:"selection"`
	Body      string `json:"-"`
}

// folder is one place prompt files are read from.
type folder struct {
	dir    string // slash path under the root
	suffix string // file name ending
	deep   bool   // subfolders too, named folder:name
}

var workspaceFolders = []folder{
	{dir: ".agentls/commands", suffix: ".md", deep: true},
	{dir: ".claude/commands", suffix: ".md", deep: true},
	{dir: ".github/prompts", suffix: ".prompt.md"},
}

// UserDir is the user's folder of prompt files.
func UserDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("prompts: %w", err)
	}
	return path.Join(dir, "agentls", "commands"), nil
}

// Load reads the prompt files of the workspace roots and of userDir ("":
// none), sorted by name. Files that cannot be read are skipped and
// returned as errors. Files are read through os.Root: a symbolic link
// out of its root is not followed, so a repository cannot make a secret
// of the user's machine the prompt.
func Load(roots []string, userDir string) ([]Prompt, []error) {
	byName := map[string]Prompt{}
	var errs []error
	add := func(p Prompt) {
		if _, dup := byName[p.Name]; !dup {
			byName[p.Name] = p
		}
	}
	for _, root := range roots {
		r, err := os.OpenRoot(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range workspaceFolders {
			ps, e := read(r.FS(), f, root, "workspace")
			errs = append(errs, e...)
			for _, p := range ps {
				add(p)
			}
		}
		r.Close()
	}
	if userDir != "" {
		if r, err := os.OpenRoot(userDir); err == nil {
			ps, e := read(r.FS(), folder{dir: ".", suffix: ".md", deep: true}, userDir, "user")
			errs = append(errs, e...)
			for _, p := range ps {
				add(p)
			}
			r.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	out := make([]Prompt, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs
}

var nameRE = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.\-:]*$`)

// read reads the prompt files of one folder.
func read(fsys fs.FS, f folder, base, scope string) ([]Prompt, []error) {
	var out []Prompt
	var errs []error
	err := fs.WalkDir(fsys, f.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == f.dir {
				return fs.SkipAll
			}
			errs = append(errs, err)
			return nil
		}
		if d.IsDir() {
			if p != f.dir && !f.deep {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, f.suffix) || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, f.dir), "/")
		name := strings.ReplaceAll(strings.TrimSuffix(rel, f.suffix), "/", ":")
		if !nameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("prompt file %s: %q is not a command name (letters, digits, _ . - :)", p, name))
			return nil
		}
		// Stat through the root: a link is followed only inside it.
		info, err := fs.Stat(fsys, p)
		if err == nil && !info.Mode().IsRegular() {
			return nil
		}
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if info.Size() > MaxBytes {
			errs = append(errs, fmt.Errorf("prompt file %s: %d bytes, more than %d", p, info.Size(), MaxBytes))
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		pr := Parse(name, string(b))
		pr.Source, pr.Scope = path.Join(base, p), scope
		out = append(out, pr)
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errs
}

// selectionRE matches the selection placeholders.
var selectionRE = lazyregexp.New(`\$SELECTION\b|\$\{selection\}|\$\{selectedText\}`)

// Parse reads a prompt file's text: front matter (between --- lines: flat
// "key: value" pairs; nothing else of YAML is needed for these files, so
// no YAML library) and body.
func Parse(name, text string) Prompt {
	p := Prompt{Name: name}
	body := strings.ReplaceAll(text, "\r\n", "\n")
	if rest, ok := strings.CutPrefix(body, "---\n"); ok {
		if front, after, ok := strings.Cut(rest, "\n---"); ok {
			body = strings.TrimPrefix(strings.TrimPrefix(after, "-"), "\n")
			for _, line := range strings.Split(front, "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				v = unquote(strings.TrimSpace(v))
				switch strings.TrimSpace(k) {
				case "description":
					p.Description = v
				case "argument-hint":
					p.ArgumentHint = v
				case "mode", "agent":
					switch v {
					case "ask", "plan":
						p.Mode = v
					case "edit", "agent":
						p.Mode = "edit"
					}
				}
			}
		}
	}
	p.Body = strings.TrimSpace(body)
	if p.Description == "" {
		p.Description = firstLine(p.Body, 80)
	}
	p.Selection = selectionRE.MatchString(p.Body)
	return p
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}

func firstLine(s string, n int) string {
	s = strings.TrimLeft(strings.TrimSpace(s), "# ")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

var (
	argsRE       = lazyregexp.New(`\$ARGUMENTS\b|\$\{input:[^}]*\}`)
	positionalRE = lazyregexp.New(`\$([1-9])\b`)
)

// Expand is the prompt for the command run with args and the editor's
// selection. Arguments the body does not place are appended, as Claude
// Code does.
func (p Prompt) Expand(args, selection string) string {
	args = strings.TrimSpace(args)
	placed := argsRE.MatchString(p.Body) || positionalRE.MatchString(p.Body)
	words := strings.Fields(args)
	out := argsRE.ReplaceAllLiteralString(p.Body, args)
	out = positionalRE.ReplaceAllStringFunc(out, func(m string) string {
		i := int(m[1] - '1')
		if i < len(words) {
			return words[i]
		}
		return ""
	})
	out = selectionRE.ReplaceAllLiteralString(out, selection)
	if !placed && args != "" {
		out += "\n\nARGUMENTS: " + args
	}
	return out
}

// Split reads "/name args" into the command's name and its arguments; ok
// is false for text that is not a slash command.
func Split(text string) (name, args string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "/")
	if !ok {
		return "", "", false
	}
	name, args, _ = strings.Cut(rest, " ")
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, args = name[:i], rest[i+1:]
	}
	if !nameRE.MatchString(name) {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}

// Find returns the prompt named name.
func Find(ps []Prompt, name string) (Prompt, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return Prompt{}, false
}
