// Package lazyregexp is a regular expression compiled on its first use, for
// the package-level patterns of a program with many commands: a command
// that never matches one does not pay to compile it when the process
// starts. agentls compiled about fifty such patterns at start, a quarter
// of the start-up of every `agentls tool` process, which is measured
// against ripgrep's.
//
// It is modelled on the Go tool's own internal lazyregexp. In a test
// binary every pattern is compiled when it is declared, so a bad pattern
// still fails at start, as regexp.MustCompile would, and not at its first
// use in production.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use. Its methods are those of
// regexp.Regexp that agentls uses.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns the pattern str, to be compiled on first use; it panics then
// (or at once in a test binary) if str does not compile.
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.Re()
	}
	return r
}

var inTest = len(os.Args) > 0 && strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

// Re is the compiled regexp.
func (r *Regexp) Re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

func (r *Regexp) String() string                 { return r.str }
func (r *Regexp) MatchString(s string) bool      { return r.Re().MatchString(s) }
func (r *Regexp) FindString(s string) string     { return r.Re().FindString(s) }
func (r *Regexp) FindStringIndex(s string) []int { return r.Re().FindStringIndex(s) }
func (r *Regexp) FindStringSubmatch(s string) []string {
	return r.Re().FindStringSubmatch(s)
}
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return r.Re().FindAllStringIndex(s, n)
}
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Re().ReplaceAllString(src, repl)
}
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Re().ReplaceAllStringFunc(src, repl)
}
func (r *Regexp) Split(s string, n int) []string   { return r.Re().Split(s, n) }
func (r *Regexp) Match(b []byte) bool              { return r.Re().Match(b) }
func (r *Regexp) FindAll(b []byte, n int) [][]byte { return r.Re().FindAll(b, n) }
func (r *Regexp) FindAllIndex(b []byte, n int) [][]int {
	return r.Re().FindAllIndex(b, n)
}
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Re().FindAllStringSubmatch(s, n)
}
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.Re().ReplaceAllLiteralString(src, repl)
}
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.Re().FindSubmatch(b) }
func (r *Regexp) FindAllString(s string, n int) []string {
	return r.Re().FindAllString(s, n)
}
func (r *Regexp) ReplaceAllFunc(src []byte, repl func([]byte) []byte) []byte {
	return r.Re().ReplaceAllFunc(src, repl)
}
