package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// holdWatches returns Options.HoldWatches that holds the watches until
// release is closed, and a channel closed once the hold began (the walk is
// over then).
func holdWatches() (hold func(context.Context), held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	return func(ctx context.Context) {
		close(held)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}, held, release
}

// TestDeferredWatchesCatchUpWithWhatChangedBefore: with the list made in
// the background, the folders are watched only once the walk is over and
// the server lets them (HoldWatches). Whatever happened to the folders in
// between (files created, a folder removed, a folder swapped for a link
// out of the root or for a file, a new folder, a file at the root, ignore
// rules edited in place) is in the list and
// the change log once they are watched, exactly as a fresh walk lists it,
// and changes made later are seen as events, in old folders and in the
// new one. Run with folders too fresh for their stamps to tell (every
// folder rescanned) and with stamps compared.
func TestDeferredWatchesCatchUpWithWhatChangedBefore(t *testing.T) {
	if !deferWatchesSupported {
		t.Skip("watches are not deferred on this system: each folder is watched before it is read")
	}
	for _, tc := range []struct {
		name  string
		racy  time.Duration
		stamp bool // wait until a change moves a folder's stamp
	}{
		{"every folder changed too recently to tell", racyWindow, false},
		{"folders told by their stamps", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old time.Duration) { racyWindow = old }(racyWindow)
			racyWindow = tc.racy
			tmp := t.TempDir()
			root := filepath.Join(tmp, "root")
			writeTree(t, root, map[string]string{
				"a.go": "package a\n", "keep/k.go": "", "gone/g.go": "", "gone/deep/d.go": "", "swap/s.go": "",
				"tofile/t.go": "", "rules/.gitignore": "*.log\n", "rules/a.log": "", "rules/b.go": "",
			})
			writeTree(t, tmp, map[string]string{"outside/o.txt": ""})
			hold, held, release := holdWatches()
			w := newWS(t, Options{Roots: []string{root}, Watch: true, ListInBackground: true, HoldWatches: hold})
			<-held
			if !w.Listed() || w.Watching() {
				t.Fatalf("held after the walk: listed %v (want true), watching %v (want false)", w.Listed(), w.Watching())
			}
			if tc.stamp {
				// Wait for the clock the kernel stamps folders with to
				// move past the folders' last change.
				probe := filepath.Join(tmp, "probe")
				waitFor(t, 5*time.Second, "a change time after the walk", func() bool {
					os.Remove(probe)
					if err := os.Mkdir(probe, 0o755); err != nil {
						t.Fatal(err)
					}
					for _, d := range []string{"", "keep", "gone", "swap", "tofile", "rules"} {
						st, err := statDir(filepath.Join(root, d), true)
						pst, perr := statDir(probe, true)
						if err != nil || perr != nil || pst.ctime <= st.ctime {
							return false
						}
					}
					return true
				})
			}
			seq := w.Seq()
			writeTree(t, root, map[string]string{"keep/new.go": "", "newdir/n.go": "", "r.go": ""})
			if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(root, "swap")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../outside", filepath.Join(root, "swap")); err != nil {
				t.Fatal(err)
			}
			// A folder replaced by a file, and ignore rules edited in
			// place (the folder's own stamp does not move).
			if err := os.RemoveAll(filepath.Join(root, "tofile")); err != nil {
				t.Fatal(err)
			}
			writeTree(t, root, map[string]string{"tofile": "now a file\n", "rules/.gitignore": "*.go\n"})
			close(release)
			waitFor(t, 10*time.Second, "every folder watched", w.Watching)
			if w.WatchedSince() <= seq {
				t.Errorf("WatchedSince %d, not after the position %d taken before the watches", w.WatchedSince(), seq)
			}
			fresh := newWS(t, Options{Roots: []string{root}})
			want := pathStrings(fresh.Files())
			if got := pathStrings(w.Files()); !slices.Equal(got, want) {
				t.Errorf("list once watched %q\nfresh walk         %q", got, want)
			}
			for _, c := range []struct {
				name string
				kind ChangeKind
			}{{"keep/new.go", Created}, {"newdir/n.go", Created}, {"r.go", Created}, {"gone/g.go", Removed}, {"gone/deep/d.go", Removed}, {"swap/s.go", Removed},
				{"tofile/t.go", Removed}, {"tofile", Created}, {"rules/a.log", Created}, {"rules/b.go", Removed}} {
				if !hasChange(w, seq, c.name, c.kind, OriginOutside) {
					cs, _ := w.ChangesSince(seq)
					t.Errorf("no %v change for %s in the log: %v", c.kind, c.name, cs)
				}
			}
			writeTree(t, root, map[string]string{"keep/later.go": "", "newdir/later.go": ""})
			waitFor(t, 2*time.Second, "files created once watched", func() bool {
				return indexed(w, "keep/later.go") && indexed(w, "newdir/later.go")
			})
		})
	}
}

// TestCommandsHaveTheFoldersWatchedAtOnce: a command started before the
// folders are watched would have its changes missed; it does not wait for
// the server's moment with no search (here never given): StartCommand
// ends the hold, and returns once every folder is watched, so the
// command's file is in its list.
func TestCommandsHaveTheFoldersWatchedAtOnce(t *testing.T) {
	if !deferWatchesSupported {
		t.Skip("watches are not deferred on this system")
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.go": "package a\n", "pkg/b.go": "package pkg\n"})
	hold, held, release := holdWatches()
	defer close(release)
	w := newWS(t, Options{Roots: []string{root}, Watch: true, ListInBackground: true, HoldWatches: hold})
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := w.StartCommand(ctx, "t1")
	if ctx.Err() != nil || !w.Watching() {
		t.Fatalf("StartCommand returned with the folders not watched (context %v, watching %v)", ctx.Err(), w.Watching())
	}
	writeTree(t, root, map[string]string{"pkg/made.go": ""})
	deltas, complete := c.End(context.Background())
	if !complete || len(deltas) != 1 || deltas[0].Path.String() != "pkg/made.go" {
		t.Errorf("a command's file: %+v, complete %v", deltas, complete)
	}
}

// TestWatchesAreNotDeferredWithoutABackgroundList: a workspace listed
// before New returns has every folder watched by then.
func TestWatchesAreNotDeferredWithoutABackgroundList(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/b.go": ""})
	w := newWS(t, Options{Roots: []string{root}, Watch: true, HoldWatches: func(context.Context) { t.Error("HoldWatches called") }})
	if !w.Watching() {
		t.Skip("no file watching here")
	}
	writeTree(t, root, map[string]string{"a/c.go": ""})
	waitFor(t, 2*time.Second, "a/c.go", func() bool { return indexed(w, "a/c.go") })
}
