package lazyregexp

import (
	"regexp"
	"slices"
	"testing"
)

func TestABadPatternFailsWhereItIsDeclaredInATest(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted a pattern that does not compile")
		}
	}()
	New(`(unclosed`)
}

func TestItMatchesAsTheCompiledPatternDoes(t *testing.T) {
	const pat, text = `(\w+)=(\d+)`, "a=1, bb=22, c=x"
	lazy, re := New(pat), regexp.MustCompile(pat)
	if lazy.MatchString(text) != re.MatchString(text) ||
		lazy.ReplaceAllString(text, "$2") != re.ReplaceAllString(text, "$2") ||
		!slices.Equal(lazy.FindStringSubmatch(text), re.FindStringSubmatch(text)) ||
		!slices.Equal(lazy.FindAllString(text, -1), re.FindAllString(text, -1)) ||
		!slices.Equal(lazy.Split(text, -1), re.Split(text, -1)) {
		t.Error("the lazy pattern answers differently from the compiled one")
	}
	if lazy.Re() != lazy.Re() {
		t.Error("compiled twice")
	}
}
