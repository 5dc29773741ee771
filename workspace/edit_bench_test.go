package workspace

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadFile reads a 10 KiB file from disk: locating it, opening it
// through the root's handle, decoding and hashing.
func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	writeTree(b, dir, map[string]string{"a/b/c.go": strings.Repeat("line of text\n", 800)})
	w := newWS(b, Options{Roots: []string{dir}})
	p := mustResolve(b, w, "a/b/c.go")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.ReadFile(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiskEditorApply rewrites a 10 KiB file: lock, check, temporary
// file with fsync, last re-read, rename, folder fsync.
func BenchmarkDiskEditorApply(b *testing.B) {
	dir := b.TempDir()
	writeTree(b, dir, map[string]string{"a/b/c.go": strings.Repeat("line of text\n", 800)})
	w := newWS(b, Options{Roots: []string{dir}})
	p := mustResolve(b, w, "a/b/c.go")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := mustRead(b, w, p)
		if err := w.DiskEditor().Apply(context.Background(), "bench", []FileEdit{replaceAll(f, strings.Repeat(fmt.Sprintf("line %d\n", i), 800))}); err != nil {
			b.Fatal(err)
		}
	}
}
