package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Lesson is what a failed task learned (L28): stored with the words of the
// task so that later tasks about the same thing find it.
type Lesson struct {
	TaskID string    `json:"taskId"`
	Time   time.Time `json:"time"`
	Words  []string  `json:"words"` // normalised content words of the prompt
	Text   string    `json:"text"`  // what was tried and why it failed
}

// LessonStore keeps lessons in a JSON-lines file (for now; the sessions
// issue moves it to SQLite). It is safe for concurrent use; Add writes
// through before it returns, so nothing is lost at exit (L27).
type LessonStore struct {
	mu   sync.Mutex // guards the file and all
	path string
	all  []Lesson
}

// OpenLessons opens (or creates on first Add) the store at path.
func OpenLessons(path string) (*LessonStore, error) {
	s := &LessonStore{path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open lessons: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var l Lesson
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Text != "" {
			s.all = append(s.all, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read lessons: %w", err)
	}
	return s, nil
}

// Add stores a lesson; Words are derived from about when empty.
func (s *LessonStore) Add(l Lesson, about string) error {
	if len(l.Words) == 0 {
		l.Words = contentWords(about)
	}
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode lesson: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("store lesson: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("store lesson: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("store lesson: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("store lesson: %w", err)
	}
	s.all = append(s.all, l)
	return nil
}

// Relevant returns up to n lessons sharing at least two content words with
// text (or one when text has fewer than three), best overlap first, newest
// first among equals.
func (s *LessonStore) Relevant(text string, n int) []Lesson {
	q := map[string]bool{}
	for _, w := range contentWords(text) {
		q[w] = true
	}
	min := 2
	if len(q) < 3 {
		min = 1
	}
	type scored struct {
		l     Lesson
		score int
	}
	s.mu.Lock()
	var hits []scored
	for _, l := range s.all {
		k := 0
		for _, w := range l.Words {
			if q[w] {
				k++
			}
		}
		if k >= min {
			hits = append(hits, scored{l, k})
		}
	}
	s.mu.Unlock()
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].l.Time.After(hits[j].l.Time)
	})
	var out []Lesson
	for i := 0; i < len(hits) && i < n; i++ {
		out = append(out, hits[i].l)
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
// digits, minus stop words, with a plural "s" trimmed, deduplicated.
func contentWords(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if len(f) > 3 && strings.HasSuffix(f, "s") && !strings.HasSuffix(f, "ss") {
			f = f[:len(f)-1]
		}
		if len(f) < 2 || stopWords[f] || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}
