package lsptest

import (
	"fmt"
	"path/filepath"
	"time"

	"go.lsp.dev/uri"
)

var timeNow = time.Now

func filenameOf(u uri.URI) (string, error) {
	if !u.IsFile() {
		return "", fmt.Errorf("%q is not a file URI", string(u))
	}
	p := u.FsPath()
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not absolute", string(u))
	}
	return filepath.Clean(p), nil
}
