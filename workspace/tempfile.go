package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentls/agentls/workspace/ownfs"
)

// Temporary files.
//
// An atomic write needs a temporary file on the same file system as its
// target. agentls makes them in .agentls/tmp/ of the target's root, never
// beside the target: a crash (SIGKILL, power loss) between creating one and
// renaming it leaves it there, where the index never lists it, the
// .agentls/.gitignore keeps it out of `git status`, and the next workspace
// open sweeps it. Names are "<base>.agentls-tmp-<pid>-<random>"; the sweep
// removes those whose process is gone, so a second agentls on the same
// folder keeps the files it is writing.
//
// Only when the target is on another file system than .agentls/ (a mount
// point inside the workspace) is the temporary file made beside the target,
// as ".<base>.agentls-tmp-<pid>-<random>"; the index never lists such names
// either, but a crash at that moment can leave one in the tree.

// tempMarker is part of the name of every temporary file agentls writes;
// the index never lists such files.
const tempMarker = ".agentls-tmp-"

// tmpDirName is the folder, inside a root, of agentls's temporary files.
const tmpDirName = StateDirName + "/tmp"

// openReadFlags open a file for reading without ever blocking on a named pipe.
const openReadFlags = os.O_RDONLY | openNonblock

// StateNames are the names agentls writes in .agentls/: a link at any of
// them (or .agentls itself as a link) refuses the whole folder.
var StateNames = []string{".gitignore", "tmp", "tasks", "commands", "recordings",
	"agentls.db", "agentls.db-wal", "agentls.db-shm", "agentls.db-journal",
	"acp-sessions.json", "acp-sessions.json.tmp"}

// ErrStateRefused is the refusal of a .agentls that is a link or holds a
// link at a name agentls writes: agentls keeps no state there.
var ErrStateRefused = errors.New("agentls's state folder is refused: it is or holds a link (a repository can ship one); agentls writes nothing through it and keeps no reports, command logs, recordings or session database for this workspace")

// openStateDir opens .agentls/ in r without following links (creating it
// with the .gitignore that keeps it out of git), or refuses it.
func openStateDir(r *root) (*ownfs.Dir, error) {
	d, err := ownfs.Open(r.dir, StateDirName, true, 0o755)
	if err == nil {
		err = d.CheckNoLinks(StateNames...)
		if err != nil {
			d.Close()
		}
	}
	if errors.Is(err, ownfs.ErrLink) {
		return nil, fmt.Errorf("%w: %w", ErrStateRefused, err)
	}
	if err != nil {
		return nil, err
	}
	// Reports, logs, temporary files and the session database are the
	// user's local state, never something to commit: keep git (and
	// editors' git views) out. The custom commands in commands/ are a
	// team's to share, so git sees them. A file in the first form (which
	// ignored commands/ too) is brought up to date.
	if old, err := d.ReadFile(".gitignore"); err == nil {
		if string(old) != stateIgnoreV1 {
			return d, nil
		}
		if err := d.Remove(".gitignore"); err != nil {
			d.Close()
			return nil, err
		}
	}
	f, err := d.OpenFile(".gitignore", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return d, nil
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	_, err = f.WriteString(stateIgnore)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// ensureStateDir is openStateDir without keeping the folder open.
func ensureStateDir(r *root) error {
	d, err := openStateDir(r)
	if err != nil {
		return err
	}
	return d.Close()
}

// stateIgnore is .agentls/.gitignore: everything but the custom commands.
const stateIgnore = "# agentls's local state (reports, command logs, recordings, sessions, temporary files).\n" +
	"# The custom commands in commands/ are yours to commit and share.\n*\n!commands/\n!commands/**\n"

// stateIgnoreV1 is the first .agentls/.gitignore, which ignored the
// custom commands too.
const stateIgnoreV1 = "# agentls's local state (reports, command logs, recordings, sessions, temporary files)\n*\n"

// writeTemp writes data to a new temporary file for rel in r (in
// .agentls/tmp/, or beside rel with sameFolder), with mode, fsynced and
// closed, and returns its name inside r.
func writeTemp(r *root, rel string, data []byte, mode fs.FileMode, sameFolder bool) (name string, err error) {
	base := path.Base(rel)
	dir := tmpDirName
	prefix := base
	if !sameFolder {
		// A refused state folder: the temporary file goes beside its
		// target, never through the link.
		if err := ensureStateDir(r); errors.Is(err, ErrStateRefused) {
			sameFolder = true
		} else if err != nil {
			return "", err
		} else if err := r.fs.Mkdir(tmpDirName, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	if sameFolder {
		dir, prefix = dirOf(rel), "."+base
	}
	var f *os.File
	for try := 0; ; try++ {
		name = path.Join(dir, prefix+tempMarker+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err = r.fs.OpenFile(osName(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try == 10 {
			return "", err
		}
	}
	defer func() {
		if err != nil {
			f.Close()
			_ = r.fs.Remove(osName(name))
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	if err = f.Chmod(mode); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return name, nil
}

// sweepTemps removes the temporary files a crashed agentls left in
// .agentls/tmp/ of r: those whose process is gone.
func sweepTemps(r *root, log *slog.Logger) {
	d, err := r.fs.Open(tmpDirName)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	removed := 0
	for _, n := range names {
		i := strings.Index(n, tempMarker)
		if i < 0 {
			continue
		}
		pid, _, _ := strings.Cut(n[i+len(tempMarker):], "-")
		if id, err := strconv.Atoi(pid); err == nil && id != os.Getpid() && pidAlive(id) {
			continue
		}
		if err := r.fs.Remove(osName(tmpDirName + "/" + n)); err == nil {
			removed++
		}
	}
	if removed > 0 && log != nil {
		log.Info("removed temporary files left by an interrupted write", "root", r.dir, "count", removed)
	}
}

// isCrossDevice reports a rename or link refused because the two names are
// on different file systems.
func isCrossDevice(err error) bool { return errors.Is(err, syscall.EXDEV) }

// limitReader reads at most max bytes of r.
func limitReader(r io.Reader, max int64) io.Reader { return io.LimitReader(r, max) }
