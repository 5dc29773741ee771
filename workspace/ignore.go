package workspace

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultExcludes is the exclude list applied in every root before any
// .gitignore: version-control folders, dependency and cache folders that are
// never source, and agentls's own state. Build outputs such as bin/, dist/,
// build/ and target/ are deliberately NOT here: projects that generate them
// list them in .gitignore, and projects that keep real files there (a
// dist/story.md) must still see them.
var DefaultExcludes = []string{
	".git/", ".hg/", ".svn/", ".jj/", ".bzr/", "_darcs/",
	"node_modules/", "bower_components/", ".yarn/cache/", ".pnpm-store/",
	"__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".tox/", ".nox/",
	".venv/", ".gradle/", ".terraform/", ".next/cache/", ".cache/",
	".DS_Store", "Thumbs.db",
	"/" + StateDirName + "/",
}

// ignoreRule is one line of a .gitignore-style file.
type ignoreRule struct {
	pattern  string // as doublestar sees it, relative to the file's folder
	negate   bool   // "!pattern": re-include
	dirOnly  bool   // "pattern/": folders only
	anchored bool   // contains a "/" before its end: matched against the relative path
	kind     uint8  // ruleLiteral, ruleSuffix or ruleGlob
	lit      string // the literal name, or the suffix for "*suffix"
}

const (
	ruleGlob uint8 = iota
	ruleLiteral
	ruleSuffix
)

// ignoreList holds the rules of one folder (its .gitignore then .ignore,
// later lines win), with the folder's path relative to the root.
type ignoreList struct {
	dir   string // slash path of the folder relative to the root; "" for the root
	rules []ignoreRule
}

// parseIgnore adds the rules of a gitignore-format text to l.
func (l *ignoreList) parse(data []byte) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if r, ok := parseRule(sc.Text()); ok {
			l.rules = append(l.rules, r)
		}
	}
}

func parseRule(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	var r ignoreRule
	if line[0] == '!' {
		r.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	if !doublestar.ValidatePattern(line) {
		return ignoreRule{}, false
	}
	r.pattern = line
	meta := strings.IndexAny(line, `*?[{\`)
	switch {
	case meta < 0:
		r.kind, r.lit = ruleLiteral, line
	case !r.anchored && line[0] == '*' && !strings.ContainsAny(line[1:], `*?[{\`):
		r.kind, r.lit = ruleSuffix, line[1:]
	}
	return r, true
}

// match reports whether the rule matches a path: rel is relative to the
// rule's folder, name is the last element.
func (r *ignoreRule) match(rel, name string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	subject := name
	if r.anchored {
		subject = rel
	}
	switch r.kind {
	case ruleLiteral:
		return subject == r.lit
	case ruleSuffix:
		return strings.HasSuffix(subject, r.lit)
	}
	return doublestar.MatchUnvalidated(r.pattern, subject)
}

// maxIgnoreFile is the largest .gitignore or .ignore file read.
const maxIgnoreFile = 8 << 20

// loadIgnoreFile reads a gitignore-format file into l; a missing file adds nothing.
func (l *ignoreList) load(path string) {
	data, err := readRegular(path, maxIgnoreFile)
	if err == nil {
		l.parse(data)
	}
}
