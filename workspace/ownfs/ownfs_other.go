//go:build !unix

package ownfs

import (
	"errors"
	"os"
	"path/filepath"
)

// Where there is no openat, each name is checked with Lstat just before
// it is used: links are refused, not followed, but a swap between the
// check and the open is not excluded.

func noLink(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return ErrLink
	}
	return nil
}

func openDirAt(parent *os.File, name string, create bool, perm os.FileMode) (*os.File, error) {
	p := filepath.Join(parent.Name(), name)
	err := noLink(p)
	if create && errors.Is(err, os.ErrNotExist) {
		if err = os.Mkdir(p, perm); err == nil || errors.Is(err, os.ErrExist) {
			err = noLink(p)
		}
	}
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func openFileAt(parent *os.File, name string, flag int, perm os.FileMode) (*os.File, error) {
	p := filepath.Join(parent.Name(), name)
	if err := noLink(p); err != nil && !(errors.Is(err, os.ErrNotExist) && flag&os.O_CREATE != 0) {
		return nil, err
	}
	return os.OpenFile(p, flag, perm)
}

func renameAt(dir *os.File, oldName, newName string) error {
	return os.Rename(filepath.Join(dir.Name(), oldName), filepath.Join(dir.Name(), newName))
}

func renameAt2(od *os.File, oldName string, nd *os.File, newName string) error {
	return os.Rename(filepath.Join(od.Name(), oldName), filepath.Join(nd.Name(), newName))
}

func unlinkAt(dir *os.File, name string) error { return os.Remove(filepath.Join(dir.Name(), name)) }

func lstatAt(d *Dir, name string) (os.FileInfo, error) {
	return os.Lstat(filepath.Join(d.f.Name(), name))
}

func links(os.FileInfo) uint64 { return 1 }

func owner(os.FileInfo) (int, bool) { return 0, false }
