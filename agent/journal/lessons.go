package journal

import (
	"context"
	"strings"
	"unicode"

	"github.com/agentls/agentls/agent/store"
)

// Lesson is what a failed task learned, as shown to a later task
// about the same thing. Lessons live in the session store:
// written when a task fails, found with its full-text index (FTS5, bm25,
// porter stemming) by the words of a new task.
//
// When a later task shown a lesson succeeds, what it did is linked to the
// lesson (Worked), so the next task on the subject learns both why the
// earlier one failed and how a later one succeeded.
type Lesson struct {
	ID     int64 // in the store
	TaskID string
	Text   string
	// Worked is what the latest later task on the same subject did to
	// succeed; "" when none has yet.
	Worked string
}

// MaxLessons is how many lessons a new task is shown.
const MaxLessons = 3

// LessonSearcher finds stored lessons by their words; *store.Store
// satisfies it.
type LessonSearcher interface {
	SearchLessons(ctx context.Context, about string, limit int) ([]store.Lesson, error)
}

// Lessons finds the lessons of earlier failed tasks about what a task is
// about (about: its prompt, file and symbol). A lesson must share at least
// two content words with the task (one when the task has fewer than
// three), compared on a light stem, so a single common word does not pull
// in an unrelated lesson. At most MaxLessons are returned.
func Lessons(ctx context.Context, st LessonSearcher, about string) []Lesson {
	if st == nil {
		return nil
	}
	hits, err := st.SearchLessons(ctx, about, 4*MaxLessons)
	if err != nil {
		return nil
	}
	q := map[string]bool{}
	for _, w := range contentWords(about) {
		q[w] = true
	}
	min := 2
	if len(q) < 3 {
		min = 1
	}
	var out []Lesson
	for _, h := range hits {
		k := 0
		for _, w := range contentWords(h.About) {
			if q[w] {
				k++
			}
		}
		if k < min {
			continue
		}
		out = append(out, Lesson{ID: h.ID, TaskID: h.TaskID, Text: h.Text, Worked: h.Worked})
		if len(out) == MaxLessons {
			break
		}
	}
	return out
}

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but of to in on at for with by from as is are was were be been
		it its this that these those there here what which who whom how why when where do does did can could
		should would will shall may might must i you we they he she me my our your their please all any some
		no not into out up down over under about than then so if else just also use using make get file files`) {
		stopWords[w] = true
	}
}

// contentWords splits text into lower-case words of two or more letters or
// digits, minus stop words, lightly stemmed (plural "s", "ing", "ed"
// trimmed), deduplicated.
func contentWords(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if stopWords[f] {
			continue
		}
		f = stem(f)
		if len(f) < 2 || stopWords[f] || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// stem trims the commonest English endings, enough to match "counting",
// "counted" and "counts" with "count".
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) && !strings.HasSuffix(w, "ss") {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}
