package agent

import (
	"sort"
	"sync"

	"github.com/aymanbagabas/go-udiff"
)

// changeLog remembers, per file, its text before the task first changed it
// and after its last change, so the result can show one unified diff.
type changeLog struct {
	mu    sync.Mutex // guards files
	files map[string]*fileChange
}

type fileChange struct {
	before, after string
	known         bool // before/after are known (false: changed by a command, name only)
}

// record notes a change of path from before to after.
func (c *changeLog) record(path, before, after string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		c.files = map[string]*fileChange{}
	}
	if f, ok := c.files[path]; ok && f.known {
		f.after = after
		return
	}
	c.files[path] = &fileChange{before: before, after: after, known: true}
}

// touch notes a change known only by name.
func (c *changeLog) touch(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		c.files = map[string]*fileChange{}
	}
	if _, ok := c.files[path]; !ok {
		c.files[path] = &fileChange{}
	}
}

// Change is one file a task changed, with its texts.
type Change struct {
	Path          string
	Before, After string
	Known         bool // Before and After are known (false: by name only)
}

// snapshot returns the changes so far, sorted by path.
func (c *changeLog) snapshot() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Change, 0, len(c.files))
	for p, f := range c.files {
		out = append(out, Change{Path: p, Before: f.before, After: f.after, Known: f.known})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (c *changeLog) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.files)
}

// list returns the changes sorted by path, with diffs.
func (c *changeLog) list() []FileChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]FileChange, 0, len(c.files))
	for p, f := range c.files {
		fc := FileChange{Path: p}
		if f.known {
			if f.before == f.after {
				continue
			}
			fc.Diff = udiff.Unified("a/"+p, "b/"+p, f.before, f.after)
		}
		out = append(out, fc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
