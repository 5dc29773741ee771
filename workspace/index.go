package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// index is one root's file list, kept compact: all paths live in one string
// arena, sorted, with an offset per path (about 4 bytes of overhead per file
// besides the path text). Readers load an immutable snapshot without
// locking; updates build a new snapshot and swap it in.
type index struct {
	r       *root
	base    *ignoreList // default excludes, Options.Exclude and .git/info/exclude
	workers int
	wt      *watcher // nil without watching

	mu   sync.Mutex          // serializes updates; guards dirs
	dirs map[string]*dirInfo // indexed folders by slash path relative to the root ("" = root)
	snap atomic.Pointer[snapshot]

	// The first walk runs in the background (walk): ready is closed once
	// its list is in snap. Everything that reads or updates the list
	// waits for it (wait); stream hands out what it has found so far.
	ready  chan struct{}
	cancel context.CancelFunc // stops the first walk
	hook   func(rel string)   // Options.WalkHook
	// found holds the first walk's files folder by folder, as each folder
	// is read, until the walk is over and no stream reads it any more.
	fmu       sync.Mutex // guards found, walked and streamers
	fcond     *sync.Cond
	found     [][]string
	walked    bool
	streamers int

	// With deferWatch, folders are not watched as they are read: each
	// folder's stamp is noted instead (dirInfo.st), and watchFolders
	// watches them all later, once, rescanning the folders whose stamp
	// moved. The server defers the watches of its first walk so they do
	// not share the CPU with a task's first search. watched is closed once
	// every folder is watched (at once when watches are not deferred).
	deferWatch atomic.Bool
	watched    chan struct{}
	walkStart  time.Time // when the first walk began, for racy stamps
}

// dirInfo is one indexed folder.
type dirInfo struct {
	rel    string      // slash path relative to the root; "" for the root
	parent *dirInfo    // nil for the root
	ign    *ignoreList // this folder's .gitignore and .ignore rules; nil if none
	st     dirStamp    // noted when read while watches are deferred
	ignSt  [2]dirStamp // its ignore files' then, when it has any
}

// snapshot is an immutable, sorted list of file paths (slash, relative to the root).
type snapshot struct {
	id    uint64 // unique among the snapshots of the process
	arena string
	offs  []uint32 // path i is arena[offs[i]:offs[i+1]]; len(offs) = n+1
}

var snapshotIDs atomic.Uint64

func (s *snapshot) len() int { return len(s.offs) - 1 }

func (s *snapshot) at(i int) string { return s.arena[s.offs[i]:s.offs[i+1]] }

// find returns the position of p, or where it would be inserted.
func (s *snapshot) find(p string) (int, bool) {
	n := s.len()
	i := sort.Search(n, func(i int) bool { return s.at(i) >= p })
	return i, i < n && s.at(i) == p
}

// newSnapshot packs sorted, unique paths.
func newSnapshot(paths []string) *snapshot {
	size := 0
	for _, p := range paths {
		size += len(p)
	}
	var b strings.Builder
	b.Grow(size)
	offs := make([]uint32, 0, len(paths)+1)
	for _, p := range paths {
		offs = append(offs, uint32(b.Len()))
		b.WriteString(p)
	}
	offs = append(offs, uint32(b.Len()))
	return &snapshot{id: snapshotIDs.Add(1), arena: b.String(), offs: offs}
}

// paths returns the snapshot's paths (substrings of the arena: no copy).
func (s *snapshot) paths() []string {
	out := make([]string, s.len())
	for i := range out {
		out[i] = s.at(i)
	}
	return out
}

// newIndex makes r's index, empty until walk lists r's files, honouring
// the exclude list and the ignore files; with a watcher, each folder is
// watched before it is read, so no change is missed between the two, or
// with deferWatch after the walk, by watchFolders.
func newIndex(r *root, exclude []string, wt *watcher, hook func(string), deferWatch bool) *index {
	idx := &index{r: r, dirs: make(map[string]*dirInfo), workers: 8, wt: wt, ready: make(chan struct{}), cancel: func() {}, hook: hook, watched: make(chan struct{})}
	idx.fcond = sync.NewCond(&idx.fmu)
	if wt != nil && deferWatch && deferWatchesSupported {
		idx.deferWatch.Store(true)
	} else {
		close(idx.watched)
	}
	base := &ignoreList{}
	for _, line := range DefaultExcludes {
		if rule, ok := parseRule(line); ok {
			base.rules = append(base.rules, rule)
		}
	}
	for _, line := range exclude {
		if rule, ok := parseRule(line); ok {
			base.rules = append(base.rules, rule)
		}
	}
	base.load(filepath.Join(r.dir, ".git", "info", "exclude"))
	idx.base = base
	idx.snap.Store(newSnapshot(nil))
	return idx
}

// walk lists the root's files, reading folders in parallel, and makes the
// list the index's; streams see each folder's files as soon as it is
// read. It ends the index's wait, with an empty list when ctx ended first,
// before any stream returns: a caller whose stream is over sees the index
// ready.
func (idx *index) walk(ctx context.Context) error {
	idx.walkStart = time.Now()
	files, dirs, err := idx.scan(ctx, &dirInfo{}, func(batch []string) {
		idx.fmu.Lock()
		idx.found = append(idx.found, batch)
		idx.fmu.Unlock()
		idx.fcond.Broadcast()
	})
	if err == nil {
		idx.mu.Lock()
		for _, d := range dirs {
			idx.dirs[d.rel] = d
		}
		slices.Sort(files)
		idx.snap.Store(newSnapshot(files))
		idx.mu.Unlock()
	}
	idx.fmu.Lock()
	close(idx.ready)
	idx.walked = true
	if idx.streamers == 0 {
		idx.found = nil
	}
	idx.fmu.Unlock()
	idx.fcond.Broadcast()
	return err
}

// wait waits for the first walk.
func (idx *index) wait() { <-idx.ready }

// isReady reports whether the first walk is over.
func (idx *index) isReady() bool {
	select {
	case <-idx.ready:
		return true
	default:
		return false
	}
}

// stream calls add with the index's files, in batches: those of each folder
// as the first walk reads it while the walk runs, the whole list once it
// is over. The batches hold exactly the files of the list the walk makes,
// each once (add must not keep or modify them). It returns once every file
// was passed, or with ctx's error.
func (idx *index) stream(ctx context.Context, add func([]string)) error {
	idx.fmu.Lock()
	if idx.walked {
		idx.fmu.Unlock()
		if s := idx.snap.Load(); s.len() > 0 {
			add(s.paths())
		}
		return ctx.Err()
	}
	idx.streamers++
	stop := context.AfterFunc(ctx, func() {
		idx.fmu.Lock()
		idx.fcond.Broadcast()
		idx.fmu.Unlock()
	})
	defer stop()
	next := 0
	for ctx.Err() == nil {
		if next < len(idx.found) {
			b := idx.found[next]
			next++
			idx.fmu.Unlock()
			add(b)
			idx.fmu.Lock()
			continue
		}
		if idx.walked {
			break
		}
		idx.fcond.Wait()
	}
	idx.streamers--
	if idx.walked && idx.streamers == 0 {
		idx.found = nil
	}
	idx.fmu.Unlock()
	return ctx.Err()
}

// excluded reports whether rel (a path below the root; name its last
// element) is excluded by the rules in force in folder d: d's and its
// ancestors' ignore files (the deepest, and the last line, win), then the
// base list.
func (idx *index) excluded(d *dirInfo, rel, name string, isDir bool) bool {
	if strings.Contains(name, tempMarker) {
		return true
	}
	for a := d; a != nil; a = a.parent {
		if a.ign == nil {
			continue
		}
		sub := rel
		if a.rel != "" {
			sub = rel[len(a.rel)+1:]
		}
		rules := a.ign.rules
		for i := len(rules) - 1; i >= 0; i-- {
			if rules[i].match(sub, name, isDir) {
				return !rules[i].negate
			}
		}
	}
	rules := idx.base.rules
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].match(rel, name, isDir) {
			return !rules[i].negate
		}
	}
	return false
}

// scan lists the files below folder start (which is not excluded), with
// workers reading folders in parallel. It returns unsorted file paths and
// every folder visited (start included); found, when not nil, gets each
// folder's files as soon as the folder is read (a batch it must not
// modify).
func (idx *index) scan(ctx context.Context, start *dirInfo, found func([]string)) (files []string, dirs []*dirInfo, err error) {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = []*dirInfo{start}
		pending = 1 // folders queued or being read
	)
	results := make([][]string, idx.workers)
	visited := make([][]*dirInfo, idx.workers)
	var wg sync.WaitGroup
	for w := 0; w < idx.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 {
					cond.Wait()
				}
				if pending == 0 {
					mu.Unlock()
					return
				}
				d := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()

				var subdirs []*dirInfo
				if ctx.Err() == nil {
					if found != nil && idx.hook != nil {
						idx.hook(d.rel)
					}
					before := len(results[w])
					results[w], subdirs = idx.readDir(d, results[w])
					visited[w] = append(visited[w], d)
					if n := len(results[w]); found != nil && n > before {
						found(results[w][before:n:n])
					}
				}
				mu.Lock()
				queue = append(queue, subdirs...)
				pending += len(subdirs) - 1
				if pending == 0 || len(subdirs) > 0 {
					cond.Broadcast()
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	n := 0
	for _, r := range results {
		n += len(r)
	}
	files = make([]string, 0, n)
	for w := range results {
		files = append(files, results[w]...)
		dirs = append(dirs, visited[w]...)
	}
	return files, dirs, nil
}

// readDir reads one folder: loads its ignore files, appends its files to
// files and returns its subfolders to visit. Unreadable folders are skipped.
func (idx *index) readDir(d *dirInfo, files []string) ([]string, []*dirInfo) {
	abs := idx.abs(d.rel)
	var st *dirStamp
	if idx.wt != nil {
		if idx.deferWatch.Load() {
			st = &d.st
		} else {
			idx.wt.add(abs)
		}
	}
	prefix := ""
	if d.rel != "" {
		prefix = d.rel + "/"
	}
	sc := dirScratch.Get().(*readDirScratch)
	defer dirScratch.Put(sc)
	sc.names, sc.ends, sc.typs = sc.names[:0], sc.ends[:0], sc.typs[:0]
	var ign *ignoreList
	// Below the root a folder is opened without following a link: one
	// swapped in for a folder since its parent was read is not walked.
	err := listDir(abs, d.rel == "", st, func(name []byte, typ fs.FileMode) {
		if typ&fs.ModeIrregular != 0 {
			return
		}
		if typ == 0 && (string(name) == ".gitignore" || string(name) == ".ignore") && ign == nil {
			ign = &ignoreList{dir: d.rel}
		}
		sc.names = append(append(sc.names, prefix...), name...)
		sc.ends = append(sc.ends, len(sc.names))
		sc.typs = append(sc.typs, typ)
	})
	if err != nil && len(sc.ends) == 0 {
		return files, nil
	}
	// Every path of the folder in one string: one allocation per folder,
	// not one per file.
	all := string(sc.names)
	if ign != nil {
		// .ignore after .gitignore: its lines win.
		if st != nil {
			// Their text may change before the folder is watched, with
			// no change to the folder's stamp: watchFolders compares.
			d.ignSt = ignoreStamps(abs)
		}
		ign.load(filepath.Join(abs, ".gitignore"))
		ign.load(filepath.Join(abs, ".ignore"))
		if len(ign.rules) > 0 {
			d.ign = ign
		}
	}
	var subdirs []*dirInfo
	start := 0
	for i, end := range sc.ends {
		rel, typ := all[start:end], sc.typs[i]
		start = end
		name := rel[len(prefix):]
		if typ&fs.ModeSymlink != 0 {
			// Symlinked folders are not followed; a symlinked file is
			// listed when its target is a regular file inside this root:
			// a link to a file outside is never listed, so grep cannot
			// read through it and every listed path reads back.
			if !idx.linkInside(filepath.Join(abs, name)) {
				continue
			}
			typ = 0
		}
		isDir := typ.IsDir()
		if idx.excluded(d, rel, name, isDir) {
			continue
		}
		if isDir {
			// Its own copy: the folder is kept for the index's life, its
			// parent's string of paths only until the list is packed.
			subdirs = append(subdirs, &dirInfo{rel: strings.Clone(rel), parent: d})
		} else {
			files = append(files, rel)
		}
	}
	return files, subdirs
}

// readDirScratch is what readDir reuses from one folder to the next.
type readDirScratch struct {
	names []byte        // the entries' paths, one after the other
	ends  []int         // where each ends in names
	typs  []fs.FileMode // each one's type
}

var dirScratch = sync.Pool{New: func() any { return new(readDirScratch) }}

// linkInside reports whether the symlink at abs points to a regular file
// inside the index's root.
func (idx *index) linkInside(abs string) bool {
	fi, err := os.Stat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	real, err := realPath(abs)
	if err != nil {
		return false
	}
	_, ok := within(idx.r.real, real)
	return ok
}

// update applies a batch of observed paths (absolute, below the root) to the
// index and returns what changed: files that appeared, disappeared, or (for
// paths in modified) were written. A path in created is reported created
// even when the index lists it already (its folder's first walk found it
// after the event). It waits for the first walk.
func (idx *index) update(ctx context.Context, abspaths []string, modified, created map[string]bool) []indexChange {
	idx.wait()
	idx.mu.Lock()
	defer idx.mu.Unlock()
	snap := idx.snap.Load()
	removeFiles := make(map[string]bool)
	var removeDirs []string
	var adds []string
	var changes []indexChange
	seenAdd := make(map[string]bool)
	for _, abs := range abspaths {
		relOS, ok := within(idx.r.dir, abs)
		if !ok || relOS == "." {
			continue
		}
		rel := filepath.ToSlash(relOS)
		parentRel, name := splitRel(rel)
		parent := idx.dirs[parentRel]
		fi, err := os.Lstat(abs)
		if err != nil {
			// Gone: a file, or a whole folder.
			if _, ok := snap.find(rel); ok {
				removeFiles[rel] = true
				changes = append(changes, indexChange{rel, Removed})
			}
			if _, ok := idx.dirs[rel]; ok {
				removeDirs = append(removeDirs, rel)
				idx.dropDirs(rel)
				changes = append(changes, idx.under(snap, rel, Removed)...)
			}
			continue
		}
		isDir := fi.IsDir()
		if _, ok := idx.dirs[rel]; ok && !isDir {
			// An indexed folder replaced by a file or a link: what was
			// below it went.
			removeDirs = append(removeDirs, rel)
			idx.dropDirs(rel)
			changes = append(changes, idx.under(snap, rel, Removed)...)
		}
		if parent == nil {
			// Its folder is not indexed (excluded, or new and reported in
			// this batch too): the folder's own event covers it.
			continue
		}
		if !isDir && !fi.Mode().IsRegular() && (fi.Mode()&fs.ModeSymlink == 0 || !idx.linkInside(abs)) {
			// Not a file the index lists (any more): a named pipe, a
			// symlink that now points outside the root.
			if _, ok := snap.find(rel); ok {
				removeFiles[rel] = true
				changes = append(changes, indexChange{rel, Removed})
			}
			continue
		}
		if idx.excluded(parent, rel, name, isDir) {
			continue
		}
		if isDir || name == ".gitignore" || name == ".ignore" {
			// A new folder, or changed ignore rules: rescan the subtree.
			target := rel
			if !isDir {
				target = parentRel
			}
			d := idx.dirs[target]
			if d == nil {
				d = &dirInfo{rel: target, parent: parent}
			} else {
				d.ign = nil
			}
			files, dirs, err := idx.scan(ctx, d, nil)
			if err != nil {
				continue
			}
			// Replace everything under target with what the scan found.
			old := map[string]bool{}
			for _, c := range idx.under(snap, target, Removed) {
				old[c.rel] = true
			}
			if target != "" {
				removeDirs = append(removeDirs, target)
				idx.dropDirs(target)
			} else {
				for p := range old {
					removeFiles[p] = true
				}
			}
			for _, dd := range dirs {
				idx.dirs[dd.rel] = dd
			}
			for _, f := range files {
				if !seenAdd[f] {
					seenAdd[f] = true
					adds = append(adds, f)
				}
				if !old[f] {
					changes = append(changes, indexChange{f, Created})
				} else {
					delete(old, f)
					if f == rel && modified[abs] {
						changes = append(changes, indexChange{f, Modified})
					}
				}
			}
			for p := range old {
				changes = append(changes, indexChange{p, Removed})
			}
			continue
		}
		if _, ok := snap.find(rel); ok {
			switch {
			case created[abs]:
				changes = append(changes, indexChange{rel, Created})
			case modified[abs]:
				changes = append(changes, indexChange{rel, Modified})
			}
			continue
		}
		if !seenAdd[rel] {
			seenAdd[rel] = true
			adds = append(adds, rel)
			changes = append(changes, indexChange{rel, Created})
		}
	}
	if len(removeFiles) > 0 || len(removeDirs) > 0 || len(adds) > 0 {
		idx.snap.Store(merge(snap, removeFiles, removeDirs, adds))
	}
	return changes
}

// dropDirs forgets folder rel and every folder below it. idx.mu is held.
func (idx *index) dropDirs(rel string) {
	for k := range idx.dirs {
		if k == rel || strings.HasPrefix(k, rel+"/") {
			delete(idx.dirs, k)
		}
	}
}

// indexChange is one file the index saw appear, change or disappear.
type indexChange struct {
	rel  string
	kind ChangeKind
}

// under lists the indexed files below folder dir ("" = all) as changes of kind.
func (idx *index) under(s *snapshot, dir string, kind ChangeKind) []indexChange {
	var out []indexChange
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	i, _ := s.find(prefix)
	for ; i < s.len(); i++ {
		p := s.at(i)
		if !strings.HasPrefix(p, prefix) {
			break
		}
		out = append(out, indexChange{p, kind})
	}
	return out
}

// merge builds a new snapshot from s without removed files and folders,
// plus adds (which may overlap s).
func merge(s *snapshot, removeFiles map[string]bool, removeDirs []string, adds []string) *snapshot {
	slices.Sort(adds)
	gone := func(p string) bool {
		if removeFiles[p] {
			return true
		}
		for _, d := range removeDirs {
			if strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	out := make([]string, 0, s.len()+len(adds))
	i, j := 0, 0
	for i < s.len() || j < len(adds) {
		var p string
		switch {
		case j >= len(adds) || i < s.len() && s.at(i) < adds[j]:
			p = s.at(i)
			i++
			if gone(p) {
				continue
			}
		case i >= s.len() || adds[j] < s.at(i):
			p = adds[j]
			j++
		default: // equal: keep one
			p = adds[j]
			i++
			j++
		}
		if len(out) > 0 && out[len(out)-1] == p {
			continue
		}
		out = append(out, p)
	}
	return newSnapshot(out)
}

// add puts a file agentls just created into the index at once, without
// waiting for the watcher (or when there is none).
func (idx *index) add(rel string) {
	abs := filepath.Join(idx.r.dir, filepath.FromSlash(rel))
	// Make sure every new folder on the way is known, then the file.
	var paths []string
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		relD, ok := within(idx.r.dir, d)
		if !ok || relD == "." {
			break
		}
		if idx.knownDir(filepath.ToSlash(relD)) {
			break
		}
		paths = append([]string{d}, paths...)
	}
	if len(paths) > 0 {
		idx.update(context.Background(), paths[:1], nil, nil)
	}
	idx.update(context.Background(), []string{abs}, nil, nil)
}

func (idx *index) knownDir(rel string) bool {
	idx.wait()
	idx.mu.Lock()
	defer idx.mu.Unlock()
	_, ok := idx.dirs[rel]
	return ok
}

// rescan rebuilds the whole index (the fallback when watching is not
// possible) and returns the files that appeared or disappeared.
func (idx *index) rescan(ctx context.Context) ([]indexChange, error) {
	idx.wait()
	files, dirs, err := idx.scan(ctx, &dirInfo{}, nil)
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	idx.mu.Lock()
	defer idx.mu.Unlock()
	old := idx.snap.Load()
	var changes []indexChange
	i, j := 0, 0
	for i < old.len() || j < len(files) {
		switch {
		case j >= len(files) || i < old.len() && old.at(i) < files[j]:
			changes = append(changes, indexChange{old.at(i), Removed})
			i++
		case i >= old.len() || files[j] < old.at(i):
			changes = append(changes, indexChange{files[j], Created})
			j++
		default:
			i++
			j++
		}
	}
	idx.dirs = make(map[string]*dirInfo, len(dirs))
	for _, d := range dirs {
		idx.dirs[d.rel] = d
	}
	idx.snap.Store(newSnapshot(files))
	return changes, nil
}

func splitRel(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// FilesVersion identifies the list Files returns now: two calls return
// equal versions (slices.Equal) only when Files returns the same paths in
// both.
func (w *Workspace) FilesVersion() []uint64 {
	roots := w.rootList()
	v := make([]uint64, len(roots))
	for i, r := range roots {
		r.idx.wait()
		v[i] = r.idx.snap.Load().id
	}
	return v
}

// Files lists every indexed file: the primary root's, sorted, then each
// other root's. It waits for the roots' first walks.
func (w *Workspace) Files() []Path {
	roots := w.rootList()
	n := 0
	for _, r := range roots {
		r.idx.wait()
		n += r.idx.snap.Load().len()
	}
	out := make([]Path, 0, n)
	for _, r := range roots {
		s := r.idx.snap.Load()
		for i := 0; i < s.len(); i++ {
			out = append(out, r.path(s.at(i)))
		}
	}
	return out
}

// Listed reports whether every root's first walk is over, so Files,
// FilesVersion and Glob answer without waiting.
func (w *Workspace) Listed() bool {
	for _, r := range w.rootList() {
		if !r.idx.isReady() {
			return false
		}
	}
	return true
}

// WaitListed waits until every root's first walk is over (then Files and
// Glob answer at once), ctx ends (its error) or the workspace closes.
func (w *Workspace) WaitListed(ctx context.Context) error {
	for _, r := range w.rootList() {
		select {
		case <-r.idx.ready:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.closing:
			return errWorkspaceClosed
		}
	}
	return nil
}

var errWorkspaceClosed = errors.New("the workspace is closed")

// StreamFiles passes every file Files lists to add, in batches, as the
// roots' walks find them: while a root's first walk runs, each folder's
// files as soon as the folder is read, so a caller can work on the first
// files long before the walk ends. The batches hold exactly the files
// Files returns once the walks are over (the same ignore files, excludes
// and links left out), each once, in no particular order; add runs on the
// caller's goroutine. It returns once every file was passed, or with
// ctx's error.
func (w *Workspace) StreamFiles(ctx context.Context, add func([]Path)) error {
	for _, r := range w.rootList() {
		err := r.idx.stream(ctx, func(rels []string) {
			paths := make([]Path, len(rels))
			for i, rel := range rels {
				paths[i] = r.path(rel)
			}
			add(paths)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
