package workspace

import (
	"path/filepath"
	"sync"
	"time"
)

// Origin says who made a change.
type Origin uint8

const (
	// OriginEditor is the editor: didChange (typing, the editor's own
	// refactorings) or a buffer closed without saving.
	OriginEditor Origin = iota + 1
	// OriginAgentls is agentls itself: DiskEditor writes, and edits the LSP
	// layer announced with ExpectEdit before sending workspace/applyEdit.
	OriginAgentls
	// OriginOutside is anything else seen on disk by the watcher: another
	// program, git, a formatter.
	OriginOutside
	// OriginCommand is what the watcher saw on disk while a command ran
	// (between StartCommand and End): presumably the command's doing.
	OriginCommand
)

func (o Origin) String() string {
	switch o {
	case OriginEditor:
		return "editor"
	case OriginAgentls:
		return "agentls"
	case OriginOutside:
		return "outside"
	case OriginCommand:
		return "command"
	}
	return "unknown"
}

// ChangeKind says what happened to the file.
type ChangeKind uint8

const (
	Modified ChangeKind = iota + 1
	Created
	Removed
)

func (k ChangeKind) String() string {
	switch k {
	case Modified:
		return "modified"
	case Created:
		return "created"
	case Removed:
		return "removed"
	}
	return "unknown"
}

// FileChange is one recorded change to one file.
type FileChange struct {
	Seq    uint64 // increases by one per change, workspace-wide; never 0
	Path   Path
	Origin Origin
	Kind   ChangeKind
	Label  string // for OriginAgentls: the label given to Apply/ExpectEdit (e.g. the task id)
	Time   time.Time
}

// maxChanges bounds the change log; older entries are dropped and queries
// reaching back past them answer complete=false.
const maxChanges = 20000

// changeLog is the workspace's ordered record of changes, plus the edits
// agentls announced so that the echo of its own writes is attributed to it.
type changeLog struct {
	mu     sync.Mutex // guards everything below
	seq    uint64
	log    []FileChange // ascending Seq
	oldest uint64       // Seq of log[0] when trimmed; changes before it are forgotten
	expect map[string][]expectation
}

// expectation is an edit agentls made or is about to make to one file.
type expectation struct {
	hash     string // of the text (without BOM) the file will hold
	label    string
	recorded bool // the change is already in the log; the echo is dropped
	deadline time.Time
}

const expectTTL = 30 * time.Second

func newChangeLog() *changeLog {
	return &changeLog{expect: make(map[string][]expectation)}
}

func (c *changeLog) record(p Path, origin Origin, kind ChangeKind, label string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.log = append(c.log, FileChange{Seq: c.seq, Path: p, Origin: origin, Kind: kind, Label: label, Time: time.Now()})
	if len(c.log) > maxChanges {
		drop := len(c.log) - maxChanges/2
		c.log = append([]FileChange(nil), c.log[drop:]...)
		c.oldest = c.log[0].Seq
	}
	return c.seq
}

func (c *changeLog) expectEdit(abs, hash, label string, recorded bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	list := c.expect[abs][:0:0]
	for _, e := range c.expect[abs] {
		if now.Before(e.deadline) {
			list = append(list, e)
		}
	}
	c.expect[abs] = append(list, expectation{hash: hash, label: label, recorded: recorded, deadline: now.Add(expectTTL)})
}

// matchExpected removes and returns the expectation for abs whose hash is
// hash, if any.
func (c *changeLog) matchExpected(abs, hash string) (expectation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.expect[abs]
	for i, e := range list {
		if e.hash == hash && time.Now().Before(e.deadline) {
			list = append(list[:i:i], list[i+1:]...)
			if len(list) == 0 {
				delete(c.expect, abs)
			} else {
				c.expect[abs] = list
			}
			return e, true
		}
	}
	return expectation{}, false
}

func (c *changeLog) hasExpected(abs string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.expect[abs]) > 0
}

// mark moves the sequence on with no change and stores the new number in
// *at, under the log's lock: a position from Seq tells whether it was
// taken after the mark.
func (c *changeLog) mark(at *uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	*at = c.seq
}

// WatchedSince is the change-log position from which every change made on
// disk reaches the log: 0, or where the folders of a root listed in the
// background were all watched (Options.ListInBackground). What was learned
// from the disk at a Seq before it may be older than the log tells.
func (w *Workspace) WatchedSince() uint64 {
	w.changes.mu.Lock()
	defer w.changes.mu.Unlock()
	return w.watchedAt
}

// Seq is the sequence number of the latest change (0 before any). A task
// notes it when it reads a file and later asks ChangedOutside(seq, ...).
func (w *Workspace) Seq() uint64 {
	w.changes.mu.Lock()
	defer w.changes.mu.Unlock()
	return w.changes.seq
}

// ChangesSince returns the changes with Seq > since, oldest first.
// complete is false when the log no longer reaches back to since (it keeps
// the latest changes only): then anything may have changed.
func (w *Workspace) ChangesSince(since uint64) (changes []FileChange, complete bool) {
	return w.changesSince(since, func(FileChange) bool { return true })
}

// ChangedOutside answers "what changed outside me since seq": the changes
// after since that were not made by agentls under label, restricted to paths
// when any are given. complete is as for ChangesSince.
func (w *Workspace) ChangedOutside(since uint64, label string, paths ...Path) (changes []FileChange, complete bool) {
	want := make(map[Path]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	return w.changesSince(since, func(c FileChange) bool {
		if c.Origin == OriginAgentls && c.Label == label {
			return false
		}
		return len(want) == 0 || want[c.Path]
	})
}

func (w *Workspace) changesSince(since uint64, keep func(FileChange) bool) ([]FileChange, bool) {
	c := w.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	complete := c.oldest == 0 || since+1 >= c.oldest
	var out []FileChange
	for i := len(c.log) - 1; i >= 0 && c.log[i].Seq > since; i-- {
		if keep(c.log[i]) {
			out = append(out, c.log[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, complete
}

// RecordChange adds a change to the log and returns its Seq. The workspace
// records its own observations; the LSP layer may call it for changes it
// alone sees (e.g. workspace/didChangeWatchedFiles from a client whose
// files the server cannot watch).
func (w *Workspace) RecordChange(p Path, origin Origin, kind ChangeKind, label string) uint64 {
	return w.changes.record(p, origin, kind, label)
}

// ExpectEdit announces that agentls is about to make p hold text (e.g. the
// LSP layer, before sending workspace/applyEdit), so the editor's didChange
// or the watcher's event that echoes it is recorded as OriginAgentls with
// label instead of as the editor's or an outside change.
func (w *Workspace) ExpectEdit(p Path, text, label string) {
	w.changes.expectEdit(w.Abs(p), hashText(text), label, false)
}

// bufferChanged is the Buffers.OnChange callback: it records editor changes
// (or the echo of an edit agentls announced).
func (w *Workspace) bufferChanged(filename string, version int32) {
	p, ok := w.pathOfAbs(filename)
	if !ok {
		return
	}
	doc, open := w.buffers.Get(filename)
	w.bufMu.Lock()
	prev, had := w.bufHash[filename]
	var cur string
	if open {
		cur = hashText(doc.Text)
		w.bufHash[filename] = cur
	} else {
		delete(w.bufHash, filename)
	}
	w.bufMu.Unlock()
	switch {
	case open && !had: // didOpen: remember what the disk holds, to tell a clean buffer
		if disk, err := w.readDisk(p); err == nil {
			w.buffers.setSavedHash(filename, doc.Version, disk.Hash)
		}
		return
	case open && prev == cur:
		return
	case !open:
		// Closed: if the buffer held unsaved text, reads now see the disk.
		if f, err := w.readDisk(p); err == nil && f.Hash == prev {
			return
		} else if err != nil && !had {
			return
		}
		w.changes.record(p, OriginEditor, Modified, "")
		return
	}
	if e, ok := w.changes.matchExpected(filename, cur); ok {
		if !e.recorded {
			w.changes.record(p, OriginAgentls, Modified, e.label)
		}
		return
	}
	w.changes.record(p, OriginEditor, Modified, "")
}

// pathOfAbs maps an absolute OS path inside a root to its Path, lexically.
func (w *Workspace) pathOfAbs(abs string) (Path, bool) {
	r, rel, ok := lexicalRoot(w.rootList(), abs)
	if !ok {
		return Path{}, false
	}
	return r.path(toSlash(rel)), true
}

func toSlash(p string) string { return filepath.ToSlash(p) }
