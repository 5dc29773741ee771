package workspace

import (
	"container/list"
	"sync"
)

// Bounds of the snapshot store.
const (
	maxSnapFile  = 256 << 10 // larger files are not kept
	maxSnapBytes = 16 << 20  // of text, over all files
	maxSnapFiles = 4096
)

// snapshots keeps the last text agentls saw on disk for small text files:
// every disk read of ReadFile and every DiskEditor write puts one. It is
// what makes a command's changes undoable without copying the workspace
// before every command: a command that rewrites or removes a file agentls
// has read (or written) leaves its text here. A file agentls never read, a
// file over 256 KiB, a binary file, and anything evicted (least recently
// used first, beyond 16 MiB or 4,096 files) has no snapshot, and a
// command's change to it is reported without the text before.
type snapshots struct {
	mu    sync.Mutex // guards everything below
	m     map[Path]*list.Element
	lru   *list.List // of *snapEntry, most recent at the front
	bytes int
}

// snapEntry is the text p held on disk when the change log was at seq.
type snapEntry struct {
	path Path
	text string
	seq  uint64
}

func newSnapshots() *snapshots {
	return &snapshots{m: make(map[Path]*list.Element), lru: list.New()}
}

// put records that p held text when the change log was at seq.
func (s *snapshots) put(p Path, text string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[p]; ok {
		s.bytes -= len(el.Value.(*snapEntry).text)
		s.lru.Remove(el)
		delete(s.m, p)
	}
	if len(text) > maxSnapFile {
		return
	}
	s.m[p] = s.lru.PushFront(&snapEntry{path: p, text: text, seq: seq})
	s.bytes += len(text)
	for s.bytes > maxSnapBytes || len(s.m) > maxSnapFiles {
		el := s.lru.Back()
		e := el.Value.(*snapEntry)
		s.bytes -= len(e.text)
		s.lru.Remove(el)
		delete(s.m, e.path)
	}
}

// all copies the entries (the texts are shared, not copied).
func (s *snapshots) all() []snapEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]snapEntry, 0, len(s.m))
	for el := s.lru.Front(); el != nil; el = el.Next() {
		out = append(out, *el.Value.(*snapEntry))
	}
	return out
}
