package workspace

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Timing of the watcher. Variables so tests can shorten them.
var (
	// debounce is how long the watcher waits for events to stop before it
	// updates the index.
	debounce = 30 * time.Millisecond
	// maxDelay bounds the wait under a steady stream of events.
	maxDelay = 150 * time.Millisecond
	// rescanInterval is the period of full rescans once watching failed.
	rescanInterval = 5 * time.Second
	// watchLimit, when > 0, caps the number of watches (tests use it to
	// simulate an exhausted inotify limit).
	watchLimit = 0
)

// watcher keeps the indexes current: one fsnotify watch per indexed folder,
// events drained on their own goroutine and applied in debounced batches.
// When a watch cannot be added (inotify's max_user_watches exhausted, too
// many open files, no fsnotify on this system) it logs one warning and
// falls back to rescanning every root every rescanInterval; it never fails
// the workspace.
type watcher struct {
	w  *Workspace
	fs *fsnotify.Watcher // nil when fsnotify is unavailable

	mu      sync.Mutex // guards polling, count and waiters
	polling bool
	count   int
	waiters map[string]chan struct{} // settle markers (base names) -> closed when seen
}

// waitFor registers done to be closed once the event for the settle
// marker name has been seen and everything before it applied.
func (wt *watcher) waitFor(name string, done chan struct{}) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.waiters == nil {
		wt.waiters = make(map[string]chan struct{})
	}
	wt.waiters[name] = done
}

func (wt *watcher) forget(name string) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	delete(wt.waiters, name)
}

// settled closes the waiter of the marker name, if any; it reports
// whether there was one.
func (wt *watcher) settled(name string) bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	done, ok := wt.waiters[name]
	if ok {
		close(done)
		delete(wt.waiters, name)
	}
	return ok
}

func newWatcher(w *Workspace) (*watcher, error) {
	wt := &watcher{w: w}
	fw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		wt.polling = true
		return wt, err
	}
	wt.fs = fw
	return wt, nil
}

// add watches folder dir; on failure it switches to polling.
func (wt *watcher) add(dir string) {
	wt.mu.Lock()
	if wt.polling || wt.fs == nil {
		wt.mu.Unlock()
		return
	}
	if watchLimit > 0 && wt.count >= watchLimit {
		wt.mu.Unlock()
		wt.fallback(dir, syscall.ENOSPC)
		return
	}
	wt.count++
	wt.mu.Unlock()
	if err := wt.fs.Add(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return // gone already: its removal will be seen
		}
		wt.fallback(dir, err)
	}
}

// fallback switches to periodic rescans, warning once.
func (wt *watcher) fallback(dir string, err error) {
	wt.mu.Lock()
	already := wt.polling
	wt.polling = true
	wt.mu.Unlock()
	if already {
		return
	}
	msg := "cannot watch more folders; the file index is now rescanned periodically instead"
	if errors.Is(err, syscall.ENOSPC) {
		msg += " (raise fs.inotify.max_user_watches to restore live updates)"
	}
	wt.w.log.Warn(msg, "dir", dir, "err", err, "every", rescanInterval)
}

func (wt *watcher) isPolling() bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.polling
}

// start runs the event loop until the workspace closes.
func (wt *watcher) start() {
	wt.w.wg.Add(1)
	go func() {
		defer wt.w.wg.Done()
		wt.loop()
	}()
}

func (wt *watcher) loop() {
	var events chan fsnotify.Event
	var errs chan error
	if wt.fs != nil {
		events, errs = wt.fs.Events, wt.fs.Errors
	}
	ticker := time.NewTicker(rescanInterval)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var first time.Time
	pending := make(map[string]bool) // path -> written (not only created/removed)
	// Paths created while a root's first walk ran: the walk may list such
	// a file before its event is applied, and the event still says it is
	// new.
	created := make(map[string]bool)
	for {
		select {
		case <-wt.w.closing:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			base := filepath.Base(ev.Name)
			if strings.HasPrefix(base, settlePrefix) {
				// Every event before the marker's is in pending: apply
				// them now, then release the waiter.
				if len(pending) > 0 {
					batch, made := pending, created
					pending, created = make(map[string]bool), make(map[string]bool)
					first = time.Time{}
					timer.Stop()
					wt.w.applyEvents(batch, made)
				}
				wt.settled(base)
				continue
			}
			if ev.Op == fsnotify.Chmod || strings.Contains(base, tempMarker) {
				continue
			}
			pending[ev.Name] = pending[ev.Name] || ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create)
			if ev.Has(fsnotify.Create) && !wt.w.Listed() {
				created[ev.Name] = true
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			wait := debounce
			if left := maxDelay - now.Sub(first); left < wait {
				wait = max(left, 0)
			}
			timer.Reset(wait)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				wt.w.log.Warn("file events overflowed; rescanning the workspace")
				wt.w.rescanAll()
				continue
			}
			wt.w.log.Warn("file watcher error", "err", err)
		case <-timer.C:
			batch, made := pending, created
			pending, created = make(map[string]bool), make(map[string]bool)
			first = time.Time{}
			wt.w.applyEvents(batch, made)
		case <-ticker.C:
			if wt.isPolling() {
				wt.w.rescanAll()
			}
		}
	}
}

// removeTree stops watching dir and every folder below it.
func (wt *watcher) removeTree(dir string) {
	if wt.fs == nil {
		return
	}
	for _, d := range wt.fs.WatchList() {
		if _, ok := within(dir, d); ok {
			_ = wt.fs.Remove(d)
			wt.mu.Lock()
			wt.count--
			wt.mu.Unlock()
		}
	}
}

func (wt *watcher) close() {
	if wt.fs != nil {
		wt.fs.Close()
	}
}

// applyEvents updates the indexes with a batch of changed paths and records
// the changes; created are the paths of the batch created while a first
// walk ran.
func (w *Workspace) applyEvents(batch, created map[string]bool) {
	byRoot := make(map[*root][]string)
	roots := w.rootList()
	for p := range batch {
		if r, _, ok := lexicalRoot(roots, p); ok {
			byRoot[r] = append(byRoot[r], p)
		}
	}
	for r, paths := range byRoot {
		w.recordObserved(r, r.idx.update(context.Background(), paths, batch, created))
	}
}

// rescanAll rebuilds every root's index and records what appeared or went.
func (w *Workspace) rescanAll() {
	for _, r := range w.rootList() {
		changes, err := r.idx.rescan(context.Background())
		if err != nil {
			w.log.Warn("rescan", "root", r.dir, "err", err)
			continue
		}
		w.recordObserved(r, changes)
	}
}

// recordObserved records changes seen on disk, attributing each: the echo
// of a write agentls made (or announced) is agentls's; a file whose disk
// text now equals its open buffer was saved by the editor and is not a new
// change; anything else came from outside.
func (w *Workspace) recordObserved(r *root, changes []indexChange) {
	for _, c := range changes {
		p := r.path(c.rel)
		abs := w.Abs(p)
		if c.kind != Removed {
			expected := w.changes.hasExpected(abs)
			doc, open := w.buffers.Get(abs)
			if expected || open && c.kind == Modified {
				// Read the file only when it can be an echo or a save.
				if disk, err := w.readDisk(p); err == nil {
					if open {
						w.buffers.noteDiskHash(abs, disk.Hash)
					}
					if expected {
						if e, ok := w.changes.matchExpected(abs, disk.Hash); ok {
							if !e.recorded {
								w.changes.record(p, OriginAgentls, c.kind, e.label)
							}
							continue
						}
					}
					if open && hashText(doc.Text) == disk.Hash {
						// The editor saved it: the buffer is clean.
						w.buffers.setSavedHash(abs, doc.Version, disk.Hash)
						continue
					}
				}
			}
		}
		origin, label := w.observedOrigin()
		w.changes.record(p, origin, c.kind, label)
	}
}
