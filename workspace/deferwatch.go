package workspace

import (
	"context"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// racyWindow: a folder whose change time is this close to the start of the
// walk that read it (or later) is rescanned once watched, whatever its
// stamp says. The kernel stamps changes with a coarse clock (a few
// milliseconds, up to seconds on some file systems), so a folder changed
// after it was read, within the same tick as a change before, keeps its
// stamp. A variable for tests.
var racyWindow = 2 * time.Second

// watchFolders watches every folder the first walk listed, parents first,
// and brings the list up to date with what happened between a folder's
// reading and its watch. A folder whose stamp moved since it was read (an
// entry added, removed or renamed in it, or the folder replaced), or that
// changed too close to the walk for its stamp to tell, is read again: what
// appeared in it or went (a new folder with all below it) is applied as
// the watcher applies events. A folder whose ignore files changed is
// listed again with all below it. It returns the changes found; a file whose text
// changed in that time is not among them (its name is listed either way).
// It runs once, after the first walk; from then on folders are watched as
// they are read.
func (idx *index) watchFolders(ctx context.Context) []indexChange {
	idx.wait()
	idx.mu.Lock()
	if !idx.deferWatch.Swap(false) {
		idx.mu.Unlock()
		return nil
	}
	racy := idx.walkStart.Add(-racyWindow).UnixNano()
	snap := idx.snap.Load()
	children := map[*dirInfo][]string{} // the indexed folders below each folder
	for _, d := range idx.dirs {
		if d.parent != nil {
			children[d.parent] = append(children[d.parent], d.rel)
		}
	}
	var paths []string
	whole := false // the root's rules changed: list everything again
	for _, rel := range slices.Sorted(maps.Keys(idx.dirs)) {
		if ctx.Err() != nil {
			break
		}
		d := idx.dirs[rel]
		abs := idx.abs(rel)
		idx.wt.add(abs)
		st, err := statDir(abs, rel == "")
		switch {
		case err != nil:
			// Gone, or no folder any more: its parent, when there is
			// one, is read again too (its stamp moved).
			paths = append(paths, abs)
		case d.ign != nil && ignoreStamps(abs) != d.ignSt:
			// The rules changed: the whole folder is listed again, what
			// else moved in it included.
			if rel == "" {
				whole = true
			}
			paths = append(paths, abs)
		case st != d.st || st.ctime >= racy:
			paths = append(paths, idx.entriesMoved(d, abs, snap, children[d])...)
		}
	}
	idx.mu.Unlock()
	if ctx.Err() != nil {
		return nil
	}
	if whole {
		changes, err := idx.rescan(ctx)
		if err != nil {
			return nil
		}
		return changes
	}
	if len(paths) == 0 {
		return nil
	}
	// A gone folder is reported by itself and by its parent's new list.
	slices.Sort(paths)
	return idx.update(ctx, slices.Compact(paths), nil, nil)
}

// entriesMoved reads folder d (at abs) again and returns the paths of the
// entries that differ from the index: listed on disk and not in the index,
// or the other way round. subdirs are the indexed folders in it. idx.mu
// is held.
func (idx *index) entriesMoved(d *dirInfo, abs string, snap *snapshot, subdirs []string) []string {
	prefix := ""
	if d.rel != "" {
		prefix = d.rel + "/"
	}
	known := map[string]bool{}
	for i, _ := snap.find(prefix); i < snap.len(); i++ {
		p := snap.at(i)
		if !strings.HasPrefix(p, prefix) {
			break
		}
		if !strings.Contains(p[len(prefix):], "/") {
			known[p[len(prefix):]] = true
		}
	}
	for _, sub := range subdirs {
		known[sub[len(prefix):]] = true
	}
	var paths []string
	err := listDir(abs, d.rel == "", nil, func(name []byte, typ fs.FileMode) {
		if typ&fs.ModeIrregular != 0 {
			return
		}
		if known[string(name)] {
			delete(known, string(name))
			return
		}
		// New here, or left out by the rules: update applies the rules.
		paths = append(paths, filepath.Join(abs, string(name)))
	})
	if err != nil {
		return []string{abs}
	}
	for name := range known {
		paths = append(paths, filepath.Join(abs, name)) // gone
	}
	return paths
}

// abs is the OS path of the folder rel of the index's root.
func (idx *index) abs(rel string) string {
	if rel == "" {
		return idx.r.dir
	}
	return filepath.Join(idx.r.dir, filepath.FromSlash(rel))
}
