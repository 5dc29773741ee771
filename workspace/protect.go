package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrProtected reports a write to git's or agentls's own state, which the
// agent's file tools never make (reads stay allowed).
var ErrProtected = errors.New("protected path")

// CheckWrite is THE write rule: it returns an error wrapping ErrProtected
// when writing p (creating or replacing the file) would change what git or
// agentls runs or allows, and nil otherwise. Refused are:
//
//   - any path with a component named .git, at any depth (the git dir, a
//     submodule's, a `.git` file that links a work tree to a git dir
//     elsewhere); names are compared as a case-insensitive file system
//     and Windows would (".GIT", ".git.", "git~1");
//   - the state folder (.agentls) of any root;
//   - a path into a folder git would take for a git dir once the write is
//     done: one that holds HEAD and objects/ or refs/, or a commondir or
//     gitdir file (so such a folder cannot be built one file at a time).
//
// The rule holds for the path as named and for the path its symlinks lead
// to. Git's configuration, attributes files in the work tree
// (.gitattributes) and editor settings are not refused here; the task's
// report lists them when a task changed them.
func (w *Workspace) CheckWrite(p Path) error {
	if p.IsZero() {
		return fmt.Errorf("empty path: %w", ErrInvalidPath)
	}
	if err := checkWriteRel(p.r.dir, p.rel); err != nil {
		return fmt.Errorf("%s %w", p, err)
	}
	real, err := realPath(w.Abs(p))
	if err != nil {
		return nil // the write itself reports it
	}
	for _, r := range w.rootList() {
		if rel, ok := within(r.real, real); ok {
			if err := checkWriteRel(r.real, toSlash(rel)); err != nil {
				return fmt.Errorf("%s (through a link) %w", p, err)
			}
		}
	}
	return nil
}

// checkWriteRel applies the write rule to rel (slash-separated, clean,
// "." for the root) inside the root folder dir. The error completes a
// sentence that starts with the path.
func checkWriteRel(dir, rel string) error {
	if rel == "." {
		return nil
	}
	comps := strings.Split(rel, "/")
	for _, c := range comps {
		if isGitName(c) {
			return fmt.Errorf("is in .git, or is a .git link: file tools do not write git's own files, whose settings name programs git runs; nothing was written. Change the work tree's files instead, and tell the user in your answer if a git setting must change: %w", ErrProtected)
		}
	}
	if strings.EqualFold(strings.TrimRight(comps[0], ". "), StateDirName) {
		return fmt.Errorf("is in agentls's state folder (%s), which tools do not write; nothing was written: %w", StateDirName, ErrProtected)
	}
	// Every folder from the file's own up to the root, as it will be after
	// the write.
	for k := len(comps) - 1; k >= 0; k-- {
		d := filepath.Join(dir, filepath.FromSlash(path.Join(comps[:k]...)))
		below := comps[k:] // what the write puts in d
		has := func(name string) bool {
			if strings.EqualFold(below[0], name) {
				return true
			}
			_, err := os.Lstat(filepath.Join(d, name))
			return err == nil
		}
		hasDir := func(name string) bool {
			if len(below) > 1 && strings.EqualFold(below[0], name) {
				return true
			}
			fi, err := os.Stat(filepath.Join(d, name))
			return err == nil && fi.IsDir()
		}
		if has("commondir") || has("gitdir") || has("HEAD") && (hasDir("objects") || hasDir("refs")) {
			where := path.Join(comps[:k]...)
			if where == "" {
				where = "the workspace root"
			}
			return fmt.Errorf("is in %s, which git would take for a git folder (it holds, or would hold, HEAD with objects/ or refs/, or a commondir or gitdir file); file tools do not write git's files there, and do not make such a folder; nothing was written: %w", where, ErrProtected)
		}
	}
	return nil
}

// isGitName reports whether the file name c names .git to git or to a
// file system: case-insensitively, with the trailing dots and spaces
// Windows drops, or as its 8.3 short name.
func isGitName(c string) bool {
	t := strings.TrimRight(c, ". ")
	return strings.EqualFold(t, ".git") || strings.EqualFold(c, "git~1")
}
