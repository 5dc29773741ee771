//go:build !linux

package workspace

import (
	"errors"
	"io/fs"
	"os"
)

// listDir calls fn for every entry of the folder abs, with its type:
// fs.ModeDir, fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular for
// anything else. name is valid only during the call.
func listDir(abs string, _ bool, _ *dirStamp, fn func(name []byte, typ fs.FileMode)) error {
	f, err := os.Open(abs)
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil && len(ents) == 0 {
		return err
	}
	for _, e := range ents {
		typ := e.Type()
		if !typ.IsDir() && !typ.IsRegular() && typ&fs.ModeSymlink == 0 {
			typ = fs.ModeIrregular
		}
		fn([]byte(e.Name()), typ&(fs.ModeDir|fs.ModeSymlink|fs.ModeIrregular))
	}
	return nil
}

// deferWatchesSupported: without folder stamps a walk watches each folder
// before reading it.
const deferWatchesSupported = false

type dirStamp struct{}

func statDir(string, bool) (dirStamp, error) { return dirStamp{}, errors.ErrUnsupported }

func ignoreStamps(string) (st [2]dirStamp) { return st }
