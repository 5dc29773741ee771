// Package benchcorpus builds the trees the benchmarks and budget tests
// search: copies of the Go source tree (GOROOT/src) cut to an exact number
// of files. GoSource caches its trees under the user cache folder so later
// runs reuse them; only benchmarks should call it: a 99,000-file tree is
// 1.4 GB. CopyGoSource writes a small tree where a test asks.
package benchcorpus

import (
	"errors"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// GoSource returns a folder holding exactly n files: GOROOT/src copied into
// copy0/, copy1/, ... until n files are there. It is built once, under
// os.UserCacheDir()/agentls-bench/gosrc-N, and reused while its completion
// mark (a file beside it) exists. $AGENTLS_BENCH_CORPUS replaces it when set.
func GoSource(n int) (dir string, built bool, err error) {
	if dir := os.Getenv("AGENTLS_BENCH_CORPUS"); dir != "" {
		return dir, false, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", false, fmt.Errorf("benchcorpus: no cache folder: %w", err)
	}
	dir = filepath.Join(cache, "agentls-bench", fmt.Sprintf("gosrc-%d", n))
	done := dir + ".complete" // beside the tree, so it holds exactly n files
	if _, err := os.Stat(done); err == nil {
		return dir, false, nil
	}
	src, rels, err := goSourceFiles()
	if err != nil {
		return "", false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", false, fmt.Errorf("benchcorpus: %w", err)
	}
	for made := 0; made < n; {
		for _, rel := range rels {
			if made == n {
				break
			}
			dst := filepath.Join(dir, fmt.Sprintf("copy%d", made/len(rels)), rel)
			if err := copyFile(filepath.Join(src, rel), dst); err != nil {
				return "", false, fmt.Errorf("benchcorpus: %w", err)
			}
			made++
		}
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		return "", false, fmt.Errorf("benchcorpus: %w", err)
	}
	return dir, true, nil
}

// CopyGoSource copies the first n regular files of GOROOT/src, in the
// order of a walk, under dir at their paths below GOROOT/src, and returns
// how many it copied: fewer than n when GOROOT/src holds fewer.
func CopyGoSource(dir string, n int) (int, error) {
	src, rels, err := goSourceFiles()
	if err != nil {
		return 0, err
	}
	rels = rels[:min(n, len(rels))]
	for _, rel := range rels {
		if err := copyFile(filepath.Join(src, rel), filepath.Join(dir, rel)); err != nil {
			return 0, fmt.Errorf("benchcorpus: %w", err)
		}
	}
	return len(rels), nil
}

// goSourceFiles is GOROOT/src and its regular files, as paths below it in
// the order of a walk.
func goSourceFiles() (src string, rels []string, err error) {
	// go/build knows GOROOT (the environment, else the toolchain's own)
	// without running a program: only package tools starts programs.
	goroot := build.Default.GOROOT
	if goroot == "" {
		return "", nil, errors.New("benchcorpus: GOROOT unknown")
	}
	src = filepath.Join(goroot, "src")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(src, p)
			rels = append(rels, rel)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("benchcorpus: list %s: %w", src, err)
	}
	if len(rels) == 0 {
		return "", nil, fmt.Errorf("benchcorpus: no files in %s", src)
	}
	return src, rels, nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
