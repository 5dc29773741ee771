package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// What commands change.
//
// The watcher sees every file a command creates, rewrites or removes, but
// not which process did it. StartCommand marks the start of a command:
// while one runs, what the watcher sees is recorded with origin
// OriginCommand (and the command's label when it is the only one running)
// instead of OriginOutside; the user saving a file during the command is
// indistinguishable and is attributed to it too. End returns the net
// change of each file since the start, with the text each changed or
// removed file held before when agentls knew it (see snapshots): enough to
// list, diff and undo a command's changes, at the cost of keeping the text
// of small files agentls read, never of copying the workspace.

// FileDelta is the net change of one file over a span of the change log.
type FileDelta struct {
	Path Path
	Kind ChangeKind // Created, Modified or Removed, comparing the start with now
	// Before is the text the file held at the start (Modified, Removed),
	// when HaveBefore: agentls had read or written it and it had not
	// changed since. Undo can restore it; without it, it cannot.
	Before     string
	HaveBefore bool
	// AfterHash is HashText of the text on disk now; "" when removed or
	// not readable as text.
	AfterHash string
	Origins   []Origin // who made the changes, in order, without repeats
}

// CommandRun is one command's span of the change log, from StartCommand to
// End.
type CommandRun struct {
	w      *Workspace
	label  string
	since  uint64
	before map[Path]string // text at the start, for files agentls knew
	ended  atomic.Bool
}

// StartCommand marks the start of a command labelled label (e.g. the
// task's id). It first lets the watcher catch up, so changes made before
// the command are not attributed to it. End must be called.
func (w *Workspace) StartCommand(ctx context.Context, label string) *CommandRun {
	w.settle(ctx)
	c := &CommandRun{w: w, label: label, before: make(map[Path]string)}
	w.cmdMu.Lock()
	if w.cmds == nil {
		w.cmds = make(map[*CommandRun]bool)
	}
	w.cmds[c] = true
	c.since = w.Seq()
	w.cmdMu.Unlock()

	// Texts known at the start: snapshots with no change recorded after
	// them, and clean open buffers (their text is the disk's).
	entries := w.snaps.all()
	changedAfter := make(map[Path]uint64)
	if len(entries) > 0 {
		oldest := entries[0].seq
		for _, e := range entries {
			oldest = min(oldest, e.seq)
		}
		log, _ := w.ChangesSince(oldest)
		for _, ch := range log {
			changedAfter[ch.Path] = ch.Seq
		}
	}
	for _, e := range entries {
		if s, ok := changedAfter[e.path]; !ok || s <= e.seq {
			c.before[e.path] = e.text
		}
	}
	// A buffer clean now is marked clean (its text is the disk's): once
	// the command changes the file, ReadFile returns the disk until the
	// editor reloads the buffer, whenever its own watcher gets to it; a
	// buffer opened and never saved or read would otherwise hide the
	// command's text (without it, 4 reads in 5 right after a command
	// returned the old buffer text).
	for _, name := range w.buffers.Filenames() {
		p, ok := w.pathOfAbs(name)
		if !ok {
			continue
		}
		doc, _ := w.buffers.Get(name)
		h := hashText(doc.Text)
		disk, err := w.readDisk(p)
		if err != nil {
			continue
		}
		w.buffers.noteDiskHash(name, disk.Hash)
		if disk.Hash == h {
			w.buffers.setSavedHash(name, doc.Version, h)
			if _, ok := c.before[p]; !ok {
				c.before[p] = doc.Text
			}
		}
	}
	return c
}

// Since is the change-log cursor at the start of the command.
func (c *CommandRun) Since() uint64 { return c.since }

// End lets the watcher catch up with what the command did and returns the
// files it created, changed or removed (net: a file created and removed
// again is not listed, nor one rewritten with the same text). complete is
// false when the workspace is not watching files (then nothing a command
// does is seen) or the change log no longer reaches back to the start.
func (c *CommandRun) End(ctx context.Context) ([]FileDelta, bool) {
	c.w.settle(ctx)
	c.w.cmdMu.Lock()
	delete(c.w.cmds, c)
	c.w.cmdMu.Unlock()
	c.ended.Store(true)
	deltas, complete := c.w.FilesChangedSince(c.since, OriginCommand, OriginOutside)
	for i := range deltas {
		d := &deltas[i]
		if d.Kind == Created {
			continue
		}
		if text, ok := c.before[d.Path]; ok {
			d.Before, d.HaveBefore = text, true
		}
	}
	out := deltas[:0]
	for _, d := range deltas {
		if d.Kind == Modified && d.HaveBefore && hashText(d.Before) == d.AfterHash {
			continue // rewritten with the same text
		}
		out = append(out, d)
	}
	return out, complete && c.w.Watching()
}

// FilesChangedSince returns the net change of every file changed after
// the change-log cursor since (a Seq) by one of origins (all when none are
// given), sorted by the order of their first change. It knows no text
// before: see StartCommand for that. complete is as for ChangesSince.
func (w *Workspace) FilesChangedSince(since uint64, origins ...Origin) ([]FileDelta, bool) {
	keep := func(c FileChange) bool {
		if len(origins) == 0 {
			return true
		}
		for _, o := range origins {
			if c.Origin == o {
				return true
			}
		}
		return false
	}
	log, complete := w.changesSince(since, keep)
	type span struct {
		first, last ChangeKind
		origins     []Origin
	}
	var order []Path
	spans := make(map[Path]*span)
	for _, c := range log {
		s := spans[c.Path]
		if s == nil {
			s = &span{first: c.Kind}
			spans[c.Path] = s
			order = append(order, c.Path)
		}
		s.last = c.Kind
		if n := len(s.origins); n == 0 || s.origins[n-1] != c.Origin {
			s.origins = append(s.origins, c.Origin)
		}
	}
	var out []FileDelta
	for _, p := range order {
		s := spans[p]
		d := FileDelta{Path: p, Origins: s.origins}
		switch {
		case s.first == Created && s.last == Removed:
			continue
		case s.first == Created:
			d.Kind = Created
		case s.last == Removed:
			d.Kind = Removed
		default:
			d.Kind = Modified
		}
		if d.Kind != Removed {
			if f, err := w.readDisk(p); err == nil {
				d.AfterHash = f.Hash
			}
		}
		out = append(out, d)
	}
	return out, complete
}

// observedOrigin is the origin and label of a change the watcher saw that
// agentls did not make: OriginCommand while a command runs.
func (w *Workspace) observedOrigin() (Origin, string) {
	w.cmdMu.Lock()
	defer w.cmdMu.Unlock()
	switch len(w.cmds) {
	case 0:
		return OriginOutside, ""
	case 1:
		for c := range w.cmds {
			return OriginCommand, c.label
		}
	}
	return OriginCommand, ""
}

// settleTimeout bounds the wait for the watcher to catch up.
const settleTimeout = 2 * time.Second

var settleN atomic.Uint64

// settle returns once the watcher has applied every file event that
// happened before the call. inotify delivers events in order, so it
// creates and removes a marker file and waits until the watcher has seen
// it, then the watcher applies everything pending at once. It first waits
// for the folders a background walk listed to be watched. The marker goes
// in .agentls/tmp/ of the primary root (watched for this alone), where
// neither git nor the index sees it; in the root folder itself only when
// that folder cannot be made. In the polling fallback it rescans; without
// watching it does nothing.
func (w *Workspace) settle(ctx context.Context) {
	if w.watch == nil {
		return
	}
	if w.watch.isPolling() {
		w.rescanAll()
		return
	}
	// Folders of a walk not watched yet would not report the command's
	// changes: they are watched now, without waiting for a moment with no
	// search.
	w.watchNowOnce.Do(func() { close(w.watchNow) })
	w.waitWatched(ctx)
	r := w.rootList()[0]
	w.settleOnce.Do(func() {
		w.settleDir = "."
		if ensureStateDir(r) != nil {
			return
		}
		if err := r.fs.Mkdir(tmpDirName, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return
		}
		w.watch.add(filepath.Join(r.dir, osName(tmpDirName)))
		w.settleDir = tmpDirName
	})
	name := settlePrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(settleN.Add(1), 10)
	done := make(chan struct{})
	w.watch.waitFor(name, done)
	defer w.watch.forget(name)
	rel := path.Join(w.settleDir, name)
	f, err := r.fs.OpenFile(osName(rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	f.Close()
	_ = r.fs.Remove(osName(rel))
	t := time.NewTimer(settleTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.log.Warn("the file watcher did not catch up in time", "waited", settleTimeout)
	case <-ctx.Done():
	case <-w.closing:
	}
}

// settlePrefix starts the name of settle's marker files. It holds
// tempMarker, so the index never lists one.
const settlePrefix = tempMarker + "settle-"

// cmdState is the Workspace's set of running commands.
type cmdState struct {
	cmdMu sync.Mutex           // guards cmds
	cmds  map[*CommandRun]bool // running: StartCommand without End

	settleOnce sync.Once
	settleDir  string // where settle's markers go, inside the primary root; set by settleOnce
}
