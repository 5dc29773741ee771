package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// exchangeChecked replaces rel with the complete temporary file tmp, on
// Linux, so that a save by another program at the same moment is never
// lost:
//
//   - rel is opened read-only and a read lease is taken on it
//     (F_SETLEASE): the kernel refuses it while anyone has the file open
//     for writing (a save in progress: the edit is refused as stale), and
//     once held, a program that opens the file for writing waits until
//     the lease is released and the lease shows it (F_GETLEASE);
//   - the file must hold want (the bytes the check saw);
//   - renameat2(RENAME_EXCHANGE) swaps the two names atomically, so the
//     file that was at rel is still there afterwards, under tmp's name;
//   - that file must still hold want (a save that renamed its own file
//     over rel just before the swap shows here), and no writer may be
//     waiting on the lease (an in-place save that started during the
//     swap); otherwise the swap is undone, their file is back at rel, and
//     the error wraps ErrStale.
//
// Both folders are opened through r, and renameat2 never follows a link
// in the last element of either name: the swap cannot leave the root.
// Where the kernel refuses the lease (a file of another user, NFS) the
// check runs without it. errNoExchange reports a file system without the
// swap; the caller renames instead.
func exchangeChecked(r *root, tmp, rel string, data, want []byte) error {
	tdir, err := r.fs.Open(osName(dirOf(tmp)))
	if err != nil {
		return errNoExchange
	}
	defer tdir.Close()
	ddir, err := r.fs.Open(osName(dirOf(rel)))
	if err != nil {
		return fmt.Errorf("write: %w", bareErr(err))
	}
	defer ddir.Close()
	f, err := r.fs.OpenFile(osName(rel), openReadFlags, 0)
	if err != nil {
		return fmt.Errorf("%w: it changed on disk during the edit", ErrStale)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: it changed on disk during the edit", ErrStale)
	}
	fd := int(f.Fd())
	leased := false
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK); err == nil {
		leased = true
		defer unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	} else if errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("%w: another program is writing it", ErrStale)
	}
	cur, err := io.ReadAll(io.LimitReader(f, int64(len(want))+1))
	if err != nil || !bytes.Equal(cur, want) {
		return fmt.Errorf("%w: it changed on disk during the edit", ErrStale)
	}
	swap := func() error {
		return unix.Renameat2(int(tdir.Fd()), path.Base(tmp), int(ddir.Fd()), path.Base(rel), unix.RENAME_EXCHANGE)
	}
	if err := swap(); err != nil {
		switch {
		case errors.Is(err, unix.EXDEV):
			return &os.LinkError{Op: "renameat2", Old: tmp, New: rel, Err: err}
		case errors.Is(err, unix.ENOENT):
			return fmt.Errorf("%w: it was removed during the edit", ErrStale)
		}
		return errNoExchange // EINVAL, ENOSYS: no RENAME_EXCHANGE here
	}
	displaced, err := readRoot(r, tmp, int64(len(want))+1)
	waiting := false
	if leased {
		lt, err := unix.FcntlInt(uintptr(fd), unix.F_GETLEASE, 0)
		waiting = err != nil || lt != unix.F_RDLCK
	}
	if err == nil && bytes.Equal(displaced, want) && !waiting {
		return nil
	}
	// Their write is at tmp now, or about to land in the file there: swap
	// back. If yet another save landed on our file meanwhile, it is newer
	// than the one at tmp: swap once more so the newest is in place.
	if err := swap(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if back, err := readRoot(r, tmp, int64(len(data))+1); err == nil && !bytes.Equal(back, data) {
		_ = swap()
	}
	return fmt.Errorf("%w: another program wrote it during the edit", ErrStale)
}
