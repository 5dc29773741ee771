package grep

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkTrigramBits measures the filter's cost per byte of Go source
// (what a build pays for every file): bytes/s over GOROOT/src/net/http.
func BenchmarkTrigramBits(b *testing.B) {
	dir := filepath.Join(runtime.GOROOT(), "src", "net", "http")
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatalf("no Go source to read: %v", err)
	}
	var texts [][]byte
	size := 0
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && e.Type().IsRegular() {
			texts = append(texts, data)
			size += len(data)
		}
	}
	b.SetBytes(int64(size))
	var scratch, out []uint64
	for b.Loop() {
		for _, t := range texts {
			trigramBits(t, &scratch, &out)
		}
	}
}
