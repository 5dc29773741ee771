package store

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// SearchLessons finds the lessons most relevant to what a new task is about
// : about is free text, typically the new prompt plus the file names in
// its editor context. Every word of it is a search term (OR), so a lesson
// matches on any shared word and ranks higher the more rare words it shares
// (FTS5 bm25; the about column weighs twice as much as the lesson text).
// Words are stemmed (porter), so "counting" finds "count". Each hit carries
// the latest "what worked" linked to it (AddWorked), if any.
func (s *Store) SearchLessons(ctx context.Context, about string, limit int) ([]Lesson, error) {
	q := ftsQuery(about)
	if q == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = 5
	}
	db, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT l.id, COALESCE(l.task_id, ''), l.about, l.text, l.tags, l.created_at,
			bm25(lessons_fts, 2.0, 1.0, 1.5) AS rank, COALESCE(w.text, ''), COALESCE(w.task_id, '')
		FROM lessons_fts JOIN lessons l ON l.id = lessons_fts.rowid
		LEFT JOIN lesson_worked w ON w.id = (SELECT id FROM lesson_worked
			WHERE lesson_id = l.id ORDER BY created_at DESC, id DESC LIMIT 1)
		WHERE lessons_fts MATCH ? ORDER BY rank, l.id DESC LIMIT ?`, q, limit)
	if err != nil {
		return nil, fmt.Errorf("search lessons: %w", err)
	}
	var out []Lesson
	for rows.Next() {
		var l Lesson
		var at int64
		if err := rows.Scan(&l.ID, &l.TaskID, &l.About, &l.Text, &l.Tags, &at, &l.Rank, &l.Worked, &l.WorkedTaskID); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search lessons: %w", err)
		}
		l.At = fromMS(at)
		out = append(out, l)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("search lessons: %w", err)
	}
	return out, nil
}

// stopWords are too common to say what a task is about.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "with": true, "is": true, "it": true, "this": true, "that": true, "be": true,
	"are": true, "as": true, "at": true, "by": true, "from": true, "do": true, "does": true, "how": true,
	"what": true, "please": true, "can": true, "you": true, "me": true, "my": true, "i": true, "all": true,
}

// ftsQuery turns free text into an FTS5 query: each distinct word, quoted
// (so FTS5 syntax in the text is inert), joined with OR.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	seen := map[string]bool{}
	var terms []string
	for _, w := range words {
		if len(w) < 2 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, `"`+w+`"`)
		if len(terms) == 64 {
			break
		}
	}
	return strings.Join(terms, " OR ")
}
