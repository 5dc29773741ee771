package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestLessonsFoundByWhatTheTaskIsAbout stores lessons of failed tasks and
// finds the right one from a new prompt worded differently, not by task ID.
func TestLessonsFoundByWhatTheTaskIsAbout(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	s := openTest(t, path)
	must(t, s.CreateTask(Task{ID: "old1", Prompt: "count the lines of main.go"}))
	must(t, s.FinishTask("old1", TaskEnd{State: StateFailed}))
	lessons := []Lesson{
		{TaskID: "old1", About: "count the lines of main.go", Text: "wc -w counts words; use wc -l to count lines", Tags: "shell wc"},
		{About: "find all Go files in the repository", Text: "find -maxdepth 1 misses subdirectories; use list_files with **/*.go", Tags: "glob find"},
		{About: "convert video to mp4 with ffmpeg", Text: "ffmpeg prints its banner on stderr; the result is at the end of the output", Tags: "ffmpeg"},
		{About: "run the unit tests", Text: "go test ./... needs the module root as working directory", Tags: "go test"},
	}
	for _, l := range lessons {
		must(t, s.AddLesson(l))
	}
	closeTest(t, s) // lessons survive a restart
	s = openTest(t, path)

	for _, tc := range []struct {
		about string
		want  string // text of the best hit, "" for no hit
	}{
		{"how many lines are in server.go?", lessons[0].Text},
		{"Counting lines in a file", lessons[0].Text}, // stemmed: counting -> count
		{"list every .go file under cmd", lessons[1].Text},
		{"the ffmpeg conversion failed", lessons[2].Text},
		{"tests fail with go test", lessons[3].Text},
		{"paint the fence", ""},
		{`"unbalanced AND (quote OR`, ""}, // FTS5 syntax in the text is inert
		{"", ""},
	} {
		got, err := s.SearchLessons(ctx, tc.about, 3)
		if err != nil {
			t.Errorf("SearchLessons(%q): %v", tc.about, err)
			continue
		}
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("SearchLessons(%q) = %q...; want nothing", tc.about, got[0].Text)
		case tc.want != "" && (len(got) == 0 || got[0].Text != tc.want):
			t.Errorf("SearchLessons(%q) = %+v; want first %q", tc.about, got, tc.want)
		}
	}
	got, err := s.SearchLessons(ctx, "count lines", 1)
	must(t, err)
	if len(got) != 1 || got[0].TaskID != "old1" || got[0].Rank >= 0 {
		t.Errorf("hit = %+v; want the task ID and a bm25 rank (negative)", got)
	}
}

// TestWhatWorkedComesWithTheLessonItFollows: what a successful task did is
// linked to a failed task's lesson; a search hit carries the latest one, a
// lesson without one carries none, and a link to a lesson that no longer
// exists is dropped.
func TestWhatWorkedComesWithTheLessonItFollows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	s := openTest(t, path)
	must(t, s.CreateTask(Task{ID: "ok1", Prompt: "count lines"}))
	must(t, s.CreateTask(Task{ID: "ok2", Prompt: "count lines again"}))
	must(t, s.AddLesson(Lesson{About: "count the lines of main.go", Text: "wc -w counts words"}))
	must(t, s.AddLesson(Lesson{About: "count the words of main.go", Text: "no lesson linked"}))
	flushTest(t, s)
	hits, err := s.SearchLessons(ctx, "count lines main.go", 5)
	must(t, err)
	if len(hits) != 2 || hits[0].Text != "wc -w counts words" {
		t.Fatalf("hits = %+v", hits)
	}
	id := hits[0].ID
	must(t, s.AddWorked(Worked{LessonID: id, TaskID: "ok1", Text: "used wc -l", At: time.Unix(10, 0)}))
	must(t, s.AddWorked(Worked{LessonID: id, TaskID: "ok2", Text: "used read_file and counted", At: time.Unix(20, 0)}))
	must(t, s.AddWorked(Worked{LessonID: 9999, Text: "no such lesson"}))
	closeTest(t, s)
	s = openTest(t, path)
	hits, err = s.SearchLessons(ctx, "count lines main.go", 5)
	must(t, err)
	if len(hits) != 2 || hits[0].Worked != "used read_file and counted" || hits[0].WorkedTaskID != "ok2" || hits[1].Worked != "" {
		t.Errorf("hits = %+v; want the latest what-worked on the first, none on the second", hits)
	}
	var n int
	must(t, s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM lesson_worked`).Scan(&n))
	if n != 2 {
		t.Errorf("%d rows of what worked; want 2 (the one for a missing lesson dropped)", n)
	}
}
