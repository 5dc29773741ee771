package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentls/agentls/workspace"
)

// agentTexts is what the host knows of the editor's buffers that hold the
// agent's edits, across all its tasks: per file (absolute filename), the
// hash of the text the disk held before the agent's first unsaved edit of
// the buffer (base) and the hash of the text the agent's last edit left in
// it (after). A buffer whose text still hashes to after while the disk
// still hashes to base holds only agent edits: it may be saved before a
// command without asking anyone, whichever task made the edits. A buffer
// the user typed into, before or after the agent's edits, is not one.
//
// Hashes only: the texts themselves are in the buffers and on disk.
type agentTexts struct {
	mu    sync.Mutex
	files map[string]agentText
}

type agentText struct{ base, after string }

// applied records an edit the editor applied to an open buffer: from the
// buffer text hashing to prev (the disk then hashing to disk) to the text
// hashing to next.
func (a *agentTexts) applied(abs, prev, disk, next string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.files == nil {
		a.files = make(map[string]agentText)
	}
	old, ok := a.files[abs]
	switch {
	case next == disk:
		delete(a.files, abs) // nothing unsaved
	case ok && old.after == prev:
		a.files[abs] = agentText{base: old.base, after: next} // another agent edit on top
	case prev == disk:
		a.files[abs] = agentText{base: disk, after: next} // the first unsaved edit of a clean buffer
	default:
		delete(a.files, abs) // on top of the user's unsaved text: not the agent's alone
	}
}

// onlyAgent reports whether the buffer abs, whose text hashes to buf while
// the disk hashes to disk, holds only agent edits on top of that disk text.
func (a *agentTexts) onlyAgent(abs, buf, disk string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.files[abs]
	return ok && t.after == buf && t.base == disk
}

// forget drops abs: its buffer is saved, clean or closed.
func (a *agentTexts) forget(abs string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.files, abs)
}

// agentTextEditor is the task's editor that records, for the host, the
// buffer texts its edits leave (agentTexts).
type agentTextEditor struct {
	next  workspace.Editor
	ws    *workspace.Workspace
	texts *agentTexts
}

func (e agentTextEditor) Apply(ctx context.Context, label string, edits []workspace.FileEdit) error {
	type before struct {
		prev, disk, next string // hashes: the buffer's, the disk's, the buffer's after the edit
		ok               bool
	}
	pre := make([]before, len(edits))
	for i, fe := range edits {
		doc, open := e.ws.Buffers().Get(e.ws.Abs(fe.Path))
		if !open || fe.Create {
			continue
		}
		disk, err := e.ws.ReadDisk(fe.Path)
		if err != nil {
			continue
		}
		next, err := workspace.ApplyEdits(doc.Text, fe.Edits)
		if err != nil {
			continue // the editor refuses it too
		}
		pre[i] = before{prev: workspace.HashText(doc.Text), disk: disk.Hash, next: workspace.HashText(next), ok: true}
	}
	err := e.next.Apply(ctx, label, edits)
	// Reviewed down to part of it: the part the user kept is the agent's
	// text of that buffer.
	kept := map[workspace.Path]string{}
	var rej *workspace.RejectedError
	if errors.As(err, &rej) {
		for _, f := range rej.Files {
			if f.Applied() {
				kept[f.Path] = workspace.HashText(f.After)
			}
		}
	}
	for i, fe := range edits {
		b := pre[i]
		ferr := err
		if h, ok := kept[fe.Path]; ok {
			b.next, ferr = h, nil
		}
		abs := e.ws.Abs(fe.Path)
		doc, open := e.ws.Buffers().Get(abs)
		// Recorded only when the buffer now holds exactly the text the
		// edit makes (or the part of it the user kept in review): an
		// edit refused, not echoed yet or written to disk instead leaves
		// the buffer as no one's but the user's (never saved without
		// them).
		if ferr != nil || !b.ok || !open || workspace.HashText(doc.Text) != b.next {
			if !open || !b.ok || workspace.HashText(doc.Text) != b.prev {
				e.texts.forget(abs)
			}
			continue
		}
		e.texts.applied(abs, b.prev, b.disk, b.next)
	}
	return err
}

// bufferState sorts the workspace's open buffers that differ from the disk
// before a command: those holding only agent edits (saved for it) and
// those holding the user's unsaved text (named).
type bufferState struct {
	agent []agentBuffer
	user  []string // workspace-relative, sorted
}

type agentBuffer struct {
	p    workspace.Path
	abs  string
	disk string // hash of the disk text the save checks against
}

// buffersBeforeCommand sorts the open buffers of ws (see bufferState). A
// buffer also counts as the agent's when the task's own record says so
// (mine: its text is the task's last text of the file and the disk the
// text before the task).
func (h *Host) buffersBeforeCommand(ws *workspace.Workspace, mine func(path, buf, disk string) bool) bufferState {
	var st bufferState
	for _, abs := range ws.Buffers().Filenames() {
		p, err := ws.Resolve(abs)
		if err != nil {
			continue // not a file of the workspace
		}
		doc, open := ws.Buffers().Get(abs)
		if !open {
			continue
		}
		disk, err := ws.ReadDisk(p)
		if err != nil {
			continue // a new file never saved, or not text: nothing a save can settle
		}
		buf := workspace.HashText(doc.Text)
		switch {
		case buf == disk.Hash:
			h.agentTexts.forget(abs)
		case ws.BufferStale(p):
			// A clean buffer the editor has not reloaded yet: the disk is
			// the truth, nothing of anyone's is unsaved.
		case h.agentTexts.onlyAgent(abs, buf, disk.Hash) || mine(p.String(), doc.Text, disk.Text):
			st.agent = append(st.agent, agentBuffer{p: p, abs: abs, disk: disk.Hash})
		default:
			st.user = append(st.user, p.String())
		}
	}
	sort.Strings(st.user)
	return st
}

// bufferLog is what a task's commands met in the editor's buffers, for
// its report: the user's unsaved files a command ran without, and the
// files a command changed on disk while the user's unsaved text held them.
type bufferLog struct {
	mu        sync.Mutex
	unsaved   map[string][]string // file -> the commands that ran on its saved copy
	conflicts map[string][]string // file -> the commands that changed it under the user's text
	warned    map[string]bool     // notes already shown to the user, by text
}

// add notes that command ran on the saved copy of files, or (conflict)
// changed them on disk under the user's unsaved text. It reports whether
// the note for them is new for this task (shown to the user once).
func (l *bufferLog) add(command string, files []string, conflict bool, note string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.unsaved
	if conflict {
		m = &l.conflicts
	}
	if *m == nil {
		*m = make(map[string][]string)
	}
	for _, f := range files {
		(*m)[f] = append((*m)[f], command)
	}
	if l.warned == nil {
		l.warned = make(map[string]bool)
	}
	if l.warned[note] {
		return false
	}
	l.warned[note] = true
	return true
}

// section is the report's "Unsaved buffers" section; "" when no command
// met the user's unsaved text.
func (l *bufferLog) section() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unsaved) == 0 && len(l.conflicts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Unsaved buffers\n\n")
	for _, f := range sortedKeys(l.conflicts) {
		fmt.Fprintf(&b, "- **conflict** %s: %s changed the file on disk while the editor held your unsaved changes to it; reads kept your text. Keep one in the editor: save yours, or reload the file from disk.\n", f, commandList(l.conflicts[f]))
	}
	for _, f := range sortedKeys(l.unsaved) {
		if _, also := l.conflicts[f]; also {
			continue
		}
		fmt.Fprintf(&b, "- %s has unsaved changes of yours: %s ran on the saved copy, without them.\n", f, commandList(l.unsaved[f]))
	}
	return b.String()
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// commandList is "`go vet ./...`" or "`go vet ./...` and 2 more commands".
func commandList(cmds []string) string {
	seen := map[string]bool{}
	var uniq []string
	for _, c := range cmds {
		if !seen[c] {
			seen[c] = true
			uniq = append(uniq, c)
		}
	}
	switch len(uniq) {
	case 0:
		return "a command"
	case 1:
		return uniq[0]
	}
	return fmt.Sprintf("%s and %d more", uniq[0], len(uniq)-1)
}

// filesPhrase is "main.go has" or "a.go, b.go have".
func filesPhrase(files []string) string {
	return strings.Join(files, ", ") + " " + plural(len(files), "has", "have")
}
