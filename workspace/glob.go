package workspace

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Glob returns the indexed files that match pattern, sorted like Files. It
// reads the index, never the disk, so the answer reflects the last index
// update (within the watcher's debounce of a change).
//
// Syntax is doublestar's: "*" and "?" within one path element, "**" across
// elements, "{a,b}" alternatives, "[a-z]" classes, "\" escapes. Patterns are
// matched against Path.String forms ("a/b.go"; "lib/x.go" for a root named
// lib after the first); a leading "./" is ignored; an absolute pattern is
// taken relative to the root that contains it. A pattern that can never
// match is an error: bad syntax (ErrBadPattern), or a place outside the
// roots, absolute or through "..", (ErrOutside). Only files are listed,
// never folders.
func (w *Workspace) Glob(pattern string) ([]Path, error) {
	roots := w.rootList()
	pat, only, err := normalizePattern(roots, pattern)
	if err != nil {
		return nil, err
	}
	m := compileGlob(pat)
	var out []Path
	var hits []int32 // positions first: no pointers, so no GC work while matching
	for _, r := range roots {
		if only != nil && r != only {
			continue
		}
		r.idx.wait()
		s := r.idx.snap.Load()
		hits = hits[:0]
		if r.name == "" {
			lo, hi := 0, s.len()
			if m.prefix != "" {
				lo, hi = prefixRange(s, m.prefix)
			}
			for i := lo; i < hi; i++ {
				if m.match(s.at(i)) {
					hits = append(hits, int32(i))
				}
			}
		} else {
			for i := 0; i < s.len(); i++ {
				if m.match(r.name + "/" + s.at(i)) {
					hits = append(hits, int32(i))
				}
			}
		}
		out = slices.Grow(out, len(hits))
		for _, i := range hits {
			out = append(out, Path{r: r, rel: s.at(int(i))})
		}
	}
	return out, nil
}

// prefixRange is the range [lo, hi) of the sorted paths starting with prefix.
func prefixRange(s *snapshot, prefix string) (lo, hi int) {
	lo, _ = s.find(prefix)
	hi = lo + sort.Search(s.len()-lo, func(i int) bool { return !strings.HasPrefix(s.at(lo+i), prefix) })
	return lo, hi
}

// normalizePattern checks pattern and makes it relative; only is the root
// an absolute pattern is confined to.
func normalizePattern(roots []*root, pattern string) (string, *root, error) {
	p := strings.TrimSpace(pattern)
	if p == "" {
		return "", nil, fmt.Errorf("empty glob pattern: %w", ErrBadPattern)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", nil, fmt.Errorf("glob pattern %q contains a NUL byte: %w", pattern, ErrBadPattern)
	}
	if !doublestar.ValidatePattern(p) {
		return "", nil, fmt.Errorf("glob pattern %q can never match: bad syntax (unclosed [ or {, or a trailing \\): %w", pattern, ErrBadPattern)
	}
	var only *root
	if len(p) >= 5 && strings.EqualFold(p[:5], "file:") {
		u, err := uriToPath(p, goos)
		if err != nil {
			return "", nil, fmt.Errorf("glob pattern %q: %w", pattern, err)
		}
		p = u
	}
	if isAbsSlash(p, goos) {
		base, rest := doublestar.SplitPattern(p)
		abs := filepath.Clean(filepath.FromSlash(base))
		r, rel, ok := lexicalRoot(roots, abs)
		if !ok {
			return "", nil, fmt.Errorf("glob pattern %q can never match: %s is outside the workspace roots (%s): %w", pattern, base, rootNames(roots), ErrOutside)
		}
		only = r
		p = rest
		if rel != "." {
			p = filepath.ToSlash(rel) + "/" + rest
		}
		if r.name != "" {
			p = r.name + "/" + p
		}
	}
	for strings.HasPrefix(p, "./") {
		p = strings.TrimLeft(p[2:], "/")
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", nil, fmt.Errorf("glob pattern %q can never match: it climbs out of the workspace with ..: %w", pattern, ErrOutside)
	}
	if p == "" || p == "." {
		p = "**"
	}
	return p, only, nil
}

// globMatcher is a compiled pattern: fast checks for the common shapes,
// doublestar for the rest.
type globMatcher struct {
	alts   []globAlt
	prefix string // a literal folder prefix every match has ("" if none)
}

type globAlt struct {
	kind   uint8
	lit    string // literal, suffix or name
	prefix string // for globPrefixSuffix / globPrefix: the folder, with a trailing "/"
	pat    string // for globGeneric
}

const (
	globGeneric      uint8 = iota
	globLiteral            // "a/b.go"
	globSuffixAny          // "**/*.go": any path ending in ".go"
	globSuffixTop          // "*.go": a top-level path ending in ".go"
	globName               // "**/go.mod": a file named go.mod anywhere
	globPrefix             // "dir/**": anything below dir
	globPrefixSuffix       // "dir/**/*.go"
)

const globMeta = `*?[{\`

func compileGlob(pat string) *globMatcher {
	alts := expandBraces(pat, 64)
	if alts == nil {
		alts = []string{pat}
	}
	m := &globMatcher{}
	for _, a := range alts {
		m.alts = append(m.alts, compileAlt(a))
	}
	if len(alts) == 1 {
		m.prefix = literalDirPrefix(alts[0])
	}
	return m
}

func compileAlt(a string) globAlt {
	if !strings.ContainsAny(a, globMeta) {
		return globAlt{kind: globLiteral, lit: a}
	}
	if rest, ok := strings.CutPrefix(a, "**/"); ok {
		if s, ok := strings.CutPrefix(rest, "*"); ok && !strings.ContainsAny(s, globMeta+"/") {
			return globAlt{kind: globSuffixAny, lit: s}
		}
		if !strings.ContainsAny(rest, globMeta+"/") {
			return globAlt{kind: globName, lit: rest}
		}
	}
	if s, ok := strings.CutPrefix(a, "*"); ok && !strings.ContainsAny(s, globMeta+"/") {
		return globAlt{kind: globSuffixTop, lit: s}
	}
	if i := strings.Index(a, "/**"); i > 0 && !strings.ContainsAny(a[:i], globMeta) {
		dir, rest := a[:i+1], a[i+3:]
		if rest == "" {
			return globAlt{kind: globPrefix, prefix: dir}
		}
		if s, ok := strings.CutPrefix(rest, "/*"); ok && !strings.ContainsAny(s, globMeta+"/") {
			return globAlt{kind: globPrefixSuffix, prefix: dir, lit: s}
		}
	}
	return globAlt{kind: globGeneric, pat: a}
}

func (m *globMatcher) match(p string) bool {
	for i := range m.alts {
		if m.alts[i].match(p) {
			return true
		}
	}
	return false
}

func (a *globAlt) match(p string) bool {
	switch a.kind {
	case globLiteral:
		return p == a.lit
	case globSuffixAny:
		return strings.HasSuffix(p, a.lit)
	case globSuffixTop:
		return strings.HasSuffix(p, a.lit) && strings.IndexByte(p, '/') < 0
	case globName:
		return p == a.lit || strings.HasSuffix(p, a.lit) && p[len(p)-len(a.lit)-1] == '/'
	case globPrefix: // doublestar: "dir/**" matches dir itself too
		return strings.HasPrefix(p, a.prefix) || len(p)+1 == len(a.prefix) && strings.HasPrefix(a.prefix, p)
	case globPrefixSuffix:
		return len(p) >= len(a.prefix)+len(a.lit) && strings.HasPrefix(p, a.prefix) && strings.HasSuffix(p, a.lit)
	}
	return doublestar.MatchUnvalidated(a.pat, p)
}

// literalDirPrefix is the literal folder part ("a/b", without the final
// slash, since "a/b/**" matches "a/b" too) before the first metacharacter of
// pat, or "".
func literalDirPrefix(pat string) string {
	i := strings.IndexAny(pat, globMeta)
	if i < 0 {
		return pat
	}
	j := strings.LastIndexByte(pat[:i], '/')
	if j < 0 {
		return ""
	}
	return pat[:j]
}

// expandBraces expands "{a,b}" alternatives (nested too) into plain
// patterns, or returns nil when the pattern has none, uses escapes or
// classes around braces, or expands to more than limit patterns (then
// doublestar handles the braces itself).
func expandBraces(pat string, limit int) []string {
	if !strings.Contains(pat, "{") || strings.ContainsAny(pat, `\[`) {
		return nil
	}
	out := []string{pat}
	for {
		var next []string
		changed := false
		for _, p := range out {
			open := strings.IndexByte(p, '{')
			if open < 0 {
				next = append(next, p)
				continue
			}
			depth, closeAt := 0, -1
			var commas []int
			for i := open; i < len(p) && closeAt < 0; i++ {
				switch p[i] {
				case '{':
					depth++
				case '}':
					depth--
					if depth == 0 {
						closeAt = i
					}
				case ',':
					if depth == 1 {
						commas = append(commas, i)
					}
				}
			}
			if closeAt < 0 {
				return nil
			}
			start := open + 1
			for _, c := range append(commas, closeAt) {
				next = append(next, p[:open]+p[start:c]+p[closeAt+1:])
				start = c + 1
			}
			changed = true
			if len(next) > limit {
				return nil
			}
		}
		out = next
		if !changed {
			break
		}
	}
	return out
}
