package grep

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// mappedAt reports whether the process has memory mapped at addr, as the
// kernel lists it in /proc/self/maps.
func mappedAt(t *testing.T, addr uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(sc.Text(), "%x-%x", &lo, &hi); err == nil && lo <= addr && addr < hi {
			return true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestRetiredChunkUnmappedOnceReadersEnd: the filter's bits live in
// memory mapped outside the Go heap; a compaction retires the chunk they
// lived in, which stays mapped, with its bits intact, while a search
// pinned before the compaction runs, and is unmapped (given back to the
// system) as soon as that search ends, even though a search pinned after
// the compaction still runs. Close retires the rest the same way.
func TestRetiredChunkUnmappedOnceReadersEnd(t *testing.T) {
	files, _ := filterCorpus(t, 50)
	x := NewIndex(0)
	if err := x.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	x.mu.RLock()
	old := x.entries[files[0].Name]
	first := x.arena.chunks[0]
	x.mu.RUnlock()
	if old == nil || len(old.bits) == 0 || !first.mapped {
		t.Fatalf("entry %+v, chunk mapped %v: want bits in a mapped chunk", old, first.mapped)
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(first.words)))
	bits := uintptr(unsafe.Pointer(unsafe.SliceData(old.bits)))
	if bits < addr || bits >= addr+uintptr(len(first.words)*8) {
		t.Fatalf("bits at %#x, outside the first chunk [%#x, +%d)", bits, addr, len(first.words)*8)
	}
	saved := slices.Clone(old.bits)
	chunkBytes := int64(len(first.words) * 8)
	if got := x.OffHeap(); got != chunkBytes {
		t.Fatalf("OffHeap %d, want one chunk of %d", got, chunkBytes)
	}

	before := x.pin()
	x.mu.Lock()
	x.compact()
	x.mu.Unlock()
	after := x.pin()
	if !mappedAt(t, addr) || !slices.Equal(old.bits, saved) {
		t.Fatal("the retired chunk was unmapped or changed while a search pinned before the compaction ran")
	}
	if got := x.OffHeap(); got != 2*chunkBytes {
		t.Fatalf("OffHeap %d, want the live and the retired chunk, %d", got, 2*chunkBytes)
	}
	x.unpin(before)
	if mappedAt(t, addr) {
		t.Fatal("the retired chunk is still mapped once the searches that could read it ended")
	}
	if got := x.OffHeap(); got != chunkBytes {
		t.Fatalf("OffHeap %d after the unmap, want %d", got, chunkBytes)
	}

	x.mu.RLock()
	live := x.arena.chunks[0]
	x.mu.RUnlock()
	liveAddr := uintptr(unsafe.Pointer(unsafe.SliceData(live.words)))
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if !mappedAt(t, liveAddr) || x.OffHeap() != chunkBytes {
		t.Fatal("Close unmapped a chunk a running search may read")
	}
	x.unpin(after)
	if mappedAt(t, liveAddr) || x.OffHeap() != 0 {
		t.Fatalf("after Close and the last search: chunk mapped %v, OffHeap %d; want nothing left", mappedAt(t, liveAddr), x.OffHeap())
	}
	if got := got(t, Query{Pattern: needleWord, Literal: true}, files, x); len(got) != 8 {
		t.Fatalf("a search after Close found %d lines, want 8", len(got))
	}
}

// TestLargeFilesReadOffHeap: files over keptBuffer are read into a
// mapping outside the Go heap, searched right (matches at both ends,
// through the filter and without it, four searches at once), and the
// mapping is gone once the worker is done with it.
func TestLargeFilesReadOffHeap(t *testing.T) {
	dir := t.TempDir()
	var files []File
	for i, size := range []int{3 << 20, keptBuffer + 1, 5 << 20, 100} {
		body := strings.Repeat("filler line of text\n", size/20+1)
		text := needleWord + " first\n" + body + needleWord + " last\n"
		name := fmt.Sprintf("big%d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Name: name, Rel: name})
	}
	root := openRoot(t, dir)
	for i := range files {
		files[i].Root = root
	}
	x := NewIndex(0)
	t.Cleanup(func() { x.Close() })
	if err := x.Build(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	m, err := Compile(Query{Pattern: needleWord, Literal: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Go(func() {
			for i := range 10 {
				res, err := m.Search(context.Background(), Request{Files: files, Index: x, Trusted: (i+s)%2 == 0})
				if err != nil || res.Matches != 2*len(files) {
					t.Errorf("search: %+v, %v; want %d matches", res, err, 2*len(files))
					return
				}
				for _, f := range res.Files {
					if len(f.Lines) != 2 || f.Lines[1].Text != needleWord+" last" {
						t.Errorf("%s: lines %+v", f.Name, f.Lines)
					}
				}
			}
		})
	}
	wg.Wait()

	// A worker's heap buffer (grown by the files before) stands aside for
	// the mapping and is back once the mapping is released.
	var b bigBuffer
	buf := make([]byte, 0, 300<<10)
	heap := unsafe.SliceData(buf)
	b.fit(&buf, 3<<20)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if !b.c.mapped || cap(buf) <= 3<<20 || !mappedAt(t, addr) {
		t.Fatalf("a buffer for a 3 MiB file: mapped %v, cap %d", b.c.mapped, cap(buf))
	}
	b.fit(&buf, 5<<20) // a larger file: a new mapping (perhaps at the same address)
	if !b.c.mapped || cap(buf) <= 5<<20 {
		t.Fatalf("a buffer for a 5 MiB file: mapped %v, cap %d", b.c.mapped, cap(buf))
	}
	addr = uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	b.release(&buf)
	if mappedAt(t, addr) {
		t.Fatal("release left the mapping")
	}
	if unsafe.SliceData(buf) != heap || cap(buf) != 300<<10 {
		t.Fatalf("after release the worker's buffer has cap %d, not its heap buffer of %d", cap(buf), 300<<10)
	}
}
