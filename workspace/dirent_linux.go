package workspace

import (
	"io/fs"
	"sync"
	"unsafe"

	"github.com/agentls/agentls/internal/rawsys"
	"golang.org/x/sys/unix"
)

// dirBufs are the buffers folders are read into: one per walking worker
// in use, grown to the largest folder read.
var dirBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// listDir calls fn for every entry of the folder abs but . and .., with
// the type the folder reports: fs.ModeDir, fs.ModeSymlink, 0 for a regular
// file, fs.ModeIrregular for anything else (an entry whose file system
// reports no type is looked up with lstat). name is valid only during the
// call. A folder below the root is opened without following a link, so a
// folder swapped for a link after its parent was read is not walked.
//
// With st not nil, it notes the folder's stamp before reading it
// (watchFolders compares it with the folder's stamp once it is watched).
//
// It reads with getdents64 into a reused buffer: os.File.ReadDir makes a
// file (with its poller registration and a fcntl), one DirEntry per entry
// and its name, which was the larger part of the walk's time. Its calls
// are raw in a process that asked for it (package rawsys).
func listDir(abs string, follow bool, st *dirStamp, fn func(name []byte, typ fs.FileMode)) error {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	var fd int
	var err error
	for {
		fd, err = rawsys.Open(abs, flags, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return err
	}
	defer rawsys.Close(fd)
	if st != nil {
		var s unix.Stat_t
		if rawsys.Fstat(fd, &s) == nil {
			*st = stampOf(&s)
		} else {
			*st = dirStamp{}
		}
	}
	bp := dirBufs.Get().(*[]byte)
	defer dirBufs.Put(bp)
	// The whole folder first: fn may open other files (ignore files),
	// and a folder read in pieces could see renames between them.
	buf := (*bp)[:0]
	for {
		if cap(buf)-len(buf) < 8<<10 {
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		n, err := rawsys.Getdents(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			*bp = buf[:0]
			return err
		}
		if n <= 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	*bp = buf[:0]
	for off := 0; off+19 <= len(buf); {
		reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
		if reclen == 0 || off+reclen > len(buf) {
			break
		}
		rec := buf[off : off+reclen]
		off += reclen
		name := rec[19:]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
			continue
		}
		var typ fs.FileMode
		switch rec[18] {
		case unix.DT_REG:
		case unix.DT_DIR:
			typ = fs.ModeDir
		case unix.DT_LNK:
			typ = fs.ModeSymlink
		case unix.DT_UNKNOWN:
			var st unix.Stat_t
			if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone since the folder was read
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
			case unix.S_IFDIR:
				typ = fs.ModeDir
			case unix.S_IFLNK:
				typ = fs.ModeSymlink
			default:
				typ = fs.ModeIrregular
			}
		default:
			typ = fs.ModeIrregular
		}
		fn(name, typ)
	}
	return nil
}

// deferWatchesSupported: folders have stamps here (inode and change
// time), so a walk may watch them after reading them (watchFolders).
const deferWatchesSupported = true

// dirStamp identifies one state of a folder: any entry added, removed or
// renamed in it moves its change time, which no program can set back; a
// folder swapped for another has another inode. The zero stamp matches
// no folder.
type dirStamp struct {
	dev, ino uint64
	ctime    int64 // nanoseconds
}

func stampOf(s *unix.Stat_t) dirStamp {
	return dirStamp{dev: uint64(s.Dev), ino: s.Ino, ctime: s.Ctim.Nano()}
}

// ignoreStamps are the stamps of the ignore files of folder abs (zero for
// one that is not there).
func ignoreStamps(abs string) (st [2]dirStamp) {
	for i, name := range [2]string{".gitignore", ".ignore"} {
		var s unix.Stat_t
		if unix.Lstat(abs+"/"+name, &s) == nil {
			st[i] = stampOf(&s)
		}
	}
	return st
}

// statDir is the stamp of the folder abs now (following a link only for
// the root, as listDir), or an error when abs is no folder any more.
func statDir(abs string, follow bool) (dirStamp, error) {
	var s unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(abs, &s)
	} else {
		err = unix.Lstat(abs, &s)
	}
	if err != nil {
		return dirStamp{}, err
	}
	if s.Mode&unix.S_IFMT != unix.S_IFDIR {
		return dirStamp{}, unix.ENOTDIR
	}
	return stampOf(&s), nil
}
