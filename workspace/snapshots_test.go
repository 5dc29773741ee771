package workspace

import (
	"fmt"
	"strings"
	"testing"
)

// TestSnapshotsStayBounded: the store of texts keeps at most maxSnapFiles
// files and maxSnapBytes of text, drops the least recently put first, and
// never keeps a file over maxSnapFile (a large file's older, smaller text
// is dropped too: it is no longer what the file holds).
func TestSnapshotsStayBounded(t *testing.T) {
	r := &root{dir: "/r"}
	s := newSnapshots()
	for i := 0; i < maxSnapFiles+10; i++ {
		s.put(r.path(fmt.Sprintf("f%d", i)), "x", uint64(i))
	}
	all := s.all()
	if len(all) != maxSnapFiles {
		t.Errorf("%d entries after %d puts; want the bound %d", len(all), maxSnapFiles+10, maxSnapFiles)
	}
	if all[len(all)-1].path.rel != "f10" {
		t.Errorf("oldest kept = %s; want f10 (the first 10 evicted)", all[len(all)-1].path.rel)
	}
	big := strings.Repeat("y", maxSnapFile-1)
	for i := 0; i < maxSnapBytes/maxSnapFile+5; i++ {
		s.put(r.path(fmt.Sprintf("big%d", i)), big, 1)
	}
	if s.bytes > maxSnapBytes {
		t.Errorf("%d bytes kept; want at most %d", s.bytes, maxSnapBytes)
	}
	p := r.path("grows")
	s.put(p, "small", 1)
	s.put(p, strings.Repeat("z", maxSnapFile+1), 2)
	for _, e := range s.all() {
		if e.path == p {
			t.Errorf("a file over %d bytes is kept (or its older text is): %d bytes", maxSnapFile, len(e.text))
		}
	}
}
