// Package workspace is the agent's view of the project the editor has open:
// the roots, the one path rule (Resolve), reads that prefer the editor's
// unsaved buffers, a file index kept current by fsnotify, change tracking
// with origins, and safe, atomic edits. It imports nothing else from agentls.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"github.com/agentls/agentls/workspace/ownfs"
)

// goos is runtime.GOOS; a variable so the path rule's platform choices are
// visible in one place.
var goos = runtime.GOOS

// DefaultMaxFileSize is the read limit when Options.MaxFileSize is 0.
const DefaultMaxFileSize = 2 << 20

// StateDirName is the folder, in the primary root, that holds agentls's own
// state. It is never indexed.
const StateDirName = ".agentls"

// Options configure a Workspace.
type Options struct {
	Roots       []string     // absolute folder paths; the first is the primary root (holds .agentls/)
	Buffers     *Buffers     // the editor's open documents; nil means a fresh store
	MaxFileSize int64        // reads above it are refused; 0 means the default (2 MiB)
	Watch       bool         // keep the index current with fsnotify
	Logger      *slog.Logger // nil means discard
	// Exclude adds gitignore-style patterns, applied in every root on top of
	// the default exclude list (DefaultExcludes).
	Exclude []string
	// ListInBackground makes New and AddRoot return before a root's files
	// are listed: the walk runs in the background, and what needs the list
	// (Files, Glob, Indexed) waits for it or takes the files as they are
	// found (StreamFiles). Changes made on disk before a folder is read
	// are in the list, not in the change log. With Watch, on Linux, the
	// walk watches no folder: once it is over (and HoldWatches returned)
	// every folder is watched, and those whose entries changed since the
	// walk read them are rescanned (the text of a file changed in that
	// time is not in the change log). Watching reports false until then, and
	// a command that starts has the folders watched at once. Without it, New and AddRoot return once the list is
	// complete and every folder watched.
	ListInBackground bool
	// HoldWatches, when set, is called in the background once a root's
	// first background walk is over, before its folders are watched; the
	// server passes a wait for a moment with no search, so watching 6,000
	// folders does not take the CPU from a task's first search. It must
	// return once ctx ends, which it does at once when a command starts
	// (StartCommand needs the folders watched).
	HoldWatches func(ctx context.Context)
	// WalkHook, when set, is called with each folder (slash path relative
	// to its root, "" for the root) before a root's first walk reads it:
	// a test holds a walk midway with it, to show what does and does not
	// wait for the list.
	WalkHook func(dir string)
}

// Workspace is one editor session's set of root folders, with their file
// index, open buffers and change log. It is safe for concurrent use.
type Workspace struct {
	buffers *Buffers
	maxSize int64
	log     *slog.Logger
	exclude []string
	bgList  bool // Options.ListInBackground
	onWalk  func(string)
	hold    func(context.Context) // Options.HoldWatches
	// watchNow is closed by the first command: the watches are held back
	// no longer.
	watchNow     chan struct{}
	watchNowOnce sync.Once
	changes      *changeLog
	// watchedAt: see WatchedSince; guarded by changes.mu.
	watchedAt uint64
	locks     fileLocks // serializes DiskEditor writes per file
	snaps     *snapshots
	cmdState

	bufMu   sync.Mutex        // guards bufHash
	bufHash map[string]string // open buffer -> hash of its text, to tell a real didChange from didOpen

	mu    sync.RWMutex // guards roots
	roots []*root      // roots[0] is the primary root

	stateOnce sync.Once // the refusal of the state folder is logged once

	watch   *watcher // nil without Options.Watch
	closing chan struct{}
	wg      sync.WaitGroup // background goroutines; Close waits for them
	once    sync.Once
}

// root is one workspace folder and its file index. A root is never
// modified once added (Paths point to it).
type root struct {
	dir  string // absolute, clean OS path as given
	real string // dir with symlinks resolved
	name string // prefix of Path.String for roots after the first; "" for the primary
	idx  *index
	// fs is the handle every file access of the root goes through (see
	// rootfs.go); opened by AddRoot, closed by Close or RemoveRoot.
	fs *os.Root
}

// path makes the Path for rel (slash-separated, clean, relative to r).
func (r *root) path(rel string) Path {
	return Path{r: r, rel: rel}
}

// New opens a workspace on opts.Roots and builds the file index of each
// root (and, with opts.Watch, starts keeping it current).
func New(ctx context.Context, opts Options) (*Workspace, error) {
	if len(opts.Roots) == 0 {
		return nil, errors.New("new workspace: no root folder given")
	}
	w := &Workspace{
		buffers:  opts.Buffers,
		maxSize:  opts.MaxFileSize,
		log:      opts.Logger,
		exclude:  opts.Exclude,
		bgList:   opts.ListInBackground,
		onWalk:   opts.WalkHook,
		hold:     opts.HoldWatches,
		watchNow: make(chan struct{}),
		changes:  newChangeLog(),
		snaps:    newSnapshots(),
		bufHash:  make(map[string]string),
		closing:  make(chan struct{}),
	}
	if w.buffers == nil {
		w.buffers = NewBuffers()
	}
	if w.maxSize <= 0 {
		w.maxSize = DefaultMaxFileSize
	}
	if w.log == nil {
		w.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Watch {
		wt, err := newWatcher(w)
		if err != nil {
			w.log.Warn("file watching unavailable; the index is rescanned periodically", "err", err)
		}
		w.watch = wt
	}
	for _, dir := range opts.Roots {
		if err := w.AddRoot(ctx, dir); err != nil {
			w.Close()
			return nil, err
		}
	}
	w.buffers.OnChange(w.bufferChanged)
	if w.watch != nil {
		w.watch.start()
	}
	return w, nil
}

// Close stops watching and closes the roots' handles: files can no longer
// be read or written through the workspace afterwards.
func (w *Workspace) Close() error {
	w.once.Do(func() {
		close(w.closing)
		if w.watch != nil {
			w.watch.close()
		}
		w.wg.Wait()
		for _, r := range w.rootList() {
			if r.fs != nil {
				r.fs.Close()
			}
		}
	})
	return nil
}

// AddRoot adds a root folder (didChangeWorkspaceFolders) and indexes it.
// Adding a folder that is already a root does nothing.
func (w *Workspace) AddRoot(ctx context.Context, dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("add root %q: not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("add root: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("add root %s: %w", dir, errNotDir)
	}
	real, err := realPath(dir)
	if err != nil {
		return fmt.Errorf("add root: %w", err)
	}
	w.mu.Lock()
	for _, r := range w.roots {
		if r.dir == dir {
			w.mu.Unlock()
			return nil
		}
	}
	r := &root{dir: dir, real: real}
	if len(w.roots) > 0 {
		r.name = w.uniqueName(filepath.Base(dir))
	}
	w.mu.Unlock()

	fsys, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("add root: %w", err)
	}
	r.fs = fsys
	sweepTemps(r, w.log)
	if err := ctx.Err(); err != nil {
		fsys.Close()
		return fmt.Errorf("index %s: %w", dir, err)
	}
	r.idx = newIndex(r, w.exclude, w.watch, w.onWalk, w.bgList)
	if !w.bgList {
		if err := r.idx.walk(ctx); err != nil {
			fsys.Close()
			return fmt.Errorf("index %s: %w", dir, err)
		}
		w.mu.Lock()
		w.roots = append(w.roots, r)
		w.mu.Unlock()
		return nil
	}
	// The root's files are listed in the background: reads, writes and
	// the path rule need no list, and what does (Files, Glob, Indexed)
	// waits for the walk, or takes its files as they are found
	// (StreamFiles). Close and RemoveRoot stop it.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.idx.cancel = cancel
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		defer cancel()
		if err := r.idx.walk(wctx); err != nil {
			w.log.Warn("workspace walk stopped", "root", dir, "err", err)
			return
		}
		if !r.idx.deferWatch.Load() {
			return
		}
		if w.hold != nil {
			// A command started meanwhile needs the watches at once.
			hctx, stop := context.WithCancel(wctx)
			go func() {
				select {
				case <-w.watchNow:
					stop()
				case <-hctx.Done():
				}
			}()
			w.hold(hctx)
			stop()
		}
		if wctx.Err() != nil {
			return
		}
		w.recordObserved(r, r.idx.watchFolders(wctx))
		w.changes.mark(&w.watchedAt)
		close(r.idx.watched)
	}()
	go func() {
		defer w.wg.Done()
		select {
		case <-w.closing:
			cancel()
		case <-wctx.Done():
		}
	}()
	w.mu.Lock()
	w.roots = append(w.roots, r)
	w.mu.Unlock()
	return nil
}

// uniqueName picks the display prefix of a new root. w.mu is held.
func (w *Workspace) uniqueName(base string) string {
	name := base
	for n := 2; ; n++ {
		taken := false
		for _, r := range w.roots {
			if r.name == name {
				taken = true
			}
		}
		if !taken {
			return name
		}
		name = base + "-" + strconv.Itoa(n)
	}
}

// RemoveRoot removes a root folder (didChangeWorkspaceFolders). Removing the
// primary root makes the next one primary; removing the last is refused.
func (w *Workspace) RemoveRoot(dir string) error {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, r := range w.roots {
		if r.dir != dir {
			continue
		}
		if len(w.roots) == 1 {
			return fmt.Errorf("remove root %s: it is the only root", dir)
		}
		if w.watch != nil {
			w.watch.removeTree(r.dir)
		}
		roots := append(append([]*root(nil), w.roots[:i]...), w.roots[i+1:]...)
		if i == 0 {
			roots[0] = &root{dir: roots[0].dir, real: roots[0].real, idx: roots[0].idx, fs: roots[0].fs}
		}
		w.roots = roots
		r.idx.cancel()
		// Paths into the removed root can no longer reach its files.
		r.fs.Close()
		return nil
	}
	return fmt.Errorf("remove root %s: not a workspace root", dir)
}

// Roots lists the root folders, the primary first.
func (w *Workspace) Roots() []string {
	roots := w.rootList()
	out := make([]string, len(roots))
	for i, r := range roots {
		out[i] = r.dir
	}
	return out
}

func (w *Workspace) rootList() []*root {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.roots
}

// StateDir is <primary root>/.agentls, created on demand (without
// following links, with a .gitignore that keeps it out of git). It is
// never indexed. It names the folder; writes into it go through OpenState.
func (w *Workspace) StateDir() string {
	r := w.rootList()[0]
	dir := filepath.Join(r.dir, StateDirName)
	if d, err := w.OpenState(); err == nil {
		d.Close()
	}
	return dir
}

// OpenState opens <primary root>/.agentls for agentls's own files,
// creating it, following no link: a .agentls that is a link, or that holds
// a link at a name agentls writes (StateNames), is refused
// (ErrStateRefused), said once in the log, and agentls keeps no state for
// the workspace rather than writing elsewhere. The caller closes the
// folder.
func (w *Workspace) OpenState() (*ownfs.Dir, error) {
	r := w.rootList()[0]
	d, err := openStateDir(r)
	if errors.Is(err, ErrStateRefused) {
		w.stateOnce.Do(func() {
			w.log.Warn("agentls's state folder refused", "dir", filepath.Join(r.dir, StateDirName), "err", err)
		})
	} else if err != nil {
		w.log.Warn("create state dir", "dir", filepath.Join(r.dir, StateDirName), "err", err)
	}
	return d, err
}

// Buffers is the store of the editor's open documents.
func (w *Workspace) Buffers() *Buffers { return w.buffers }

// Abs is the OS path of p.
func (w *Workspace) Abs(p Path) string {
	if p.rel == "." {
		return p.r.dir
	}
	return filepath.Join(p.r.dir, filepath.FromSlash(p.rel))
}

var errNotDir = errors.New("not a directory")
