package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// openRaw opens a database without the store, to build it at an old version.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_foreign_keys=1&_journal_mode=WAL")
	must(t, err)
	db.SetMaxOpenConns(1)
	return db
}

// seed writes, with the SQL of schema version v, data every later version
// must keep.
func seed(t *testing.T, db *sql.DB, v int) {
	t.Helper()
	if v < 1 {
		return
	}
	for _, q := range []string{
		`INSERT INTO sessions(id, title, created_at, updated_at) VALUES('S', 'old session', 1, 1)`,
		`INSERT INTO tasks(id, session_id, prompt, state, created_at, updated_at, llm_calls) VALUES('T', 'S', 'count the lines', 'failed', 1, 1, 3)`,
		`INSERT INTO messages(task_id, seq, role, content, created_at) VALUES('T', 0, 'user', 'count the lines', 1)`,
		`INSERT INTO tool_calls(task_id, call_id, name, duration_us, created_at) VALUES('T', 'c1', 'run_command', 2000, 1)`,
		`INSERT INTO lessons(task_id, about, text, created_at) VALUES('T', 'count lines of a file', 'use wc -l, not wc -w', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("seed v%d: %s: %v", v, q, err)
		}
	}
}

// TestMigrateFromEachVersion builds a database at every earlier schema
// version (0 is an empty file), puts data in it, opens it with the store and
// checks the schema is current and the data is still there and usable.
func TestMigrateFromEachVersion(t *testing.T) {
	ctx := context.Background()
	if SchemaVersion() < 2 {
		t.Fatalf("SchemaVersion() = %d; the test needs at least two versions", SchemaVersion())
	}
	for from := 0; from < SchemaVersion(); from++ {
		t.Run(fmt.Sprintf("from_v%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agentls.db")
			db := openRaw(t, path)
			must(t, migrate(ctx, db, from))
			if v, err := schemaVersion(ctx, db); err != nil || v != from {
				t.Fatalf("built version %d, %v; want %d", v, err, from)
			}
			seed(t, db, from)
			must(t, db.Close())

			s := openTest(t, path)
			v, err := schemaVersion(ctx, s.r)
			must(t, err)
			if v != SchemaVersion() {
				t.Fatalf("after Open schema version = %d; want %d", v, SchemaVersion())
			}
			if from == 0 {
				ts, err := s.Tasks(ctx, TaskFilter{})
				must(t, err)
				if len(ts) != 0 {
					t.Errorf("new database has tasks %+v", ts)
				}
				return
			}
			rec, err := s.LoadTask(ctx, "T")
			must(t, err)
			if rec.Prompt != "count the lines" || len(rec.Messages) != 1 || rec.LLMCalls != 3 || len(rec.ToolCalls) != 1 {
				t.Errorf("task after migration = %+v", rec)
			}
			// Lessons written before FTS existed are found (the migration rebuilt the index).
			ls, err := s.SearchLessons(ctx, "how many lines does main.go have", 5)
			must(t, err)
			if len(ls) != 1 || ls[0].Text != "use wc -l, not wc -w" {
				t.Errorf("SearchLessons after migration = %+v; want the old lesson", ls)
			}
			st, err := s.Stats(ctx, time.Time{}, 0)
			must(t, err)
			if st.Tasks != 1 || st.Failed != 1 || len(st.MostUsedTools) != 1 {
				t.Errorf("Stats after migration = %+v", st)
			}
			// And the migrated database takes new writes, what worked
			// linked to an old lesson included.
			must(t, s.AddLesson(Lesson{About: "new", Text: "new lesson"}))
			must(t, s.AddWorked(Worked{LessonID: ls[0].ID, TaskID: "T", Text: "wc -l worked"}))
			flushTest(t, s)
			ls, err = s.SearchLessons(ctx, "how many lines does main.go have", 5)
			must(t, err)
			if len(ls) != 1 || ls[0].Worked != "wc -l worked" {
				t.Errorf("SearchLessons after AddWorked = %+v; want what worked", ls)
			}
		})
	}
}

func TestMigrateIsIdempotentAndRefusesNewer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentls.db")
	s := openTest(t, path)
	closeTest(t, s)
	s = openTest(t, path) // reopening at the current version changes nothing
	closeTest(t, s)

	db := openRaw(t, path)
	_, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+1))
	must(t, err)
	must(t, db.Close())
	_, err = Open(ctx, path, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this agentls") {
		t.Fatalf("Open of a newer schema = %v; want a refusal", err)
	}
}

func TestMigrationFailureLeavesPreviousVersion(t *testing.T) {
	ctx := context.Background()
	bad := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a(x);")},
		"migrations/0002_b.sql": {Data: []byte("CREATE TABLE b(x); THIS IS NOT SQL;")},
	}
	ms, err := loadMigrations(bad)
	must(t, err)
	db := openRaw(t, filepath.Join(t.TempDir(), "x.db"))
	defer db.Close()
	must(t, applyMigration(ctx, db, ms[0]))
	if err := applyMigration(ctx, db, ms[1]); err == nil {
		t.Fatal("a broken migration applied")
	}
	v, err := schemaVersion(ctx, db)
	must(t, err)
	var n int
	must(t, db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'`).Scan(&n))
	if v != 1 || n != 0 {
		t.Errorf("after a failed step: version %d, table b present %d; want 1, 0 (rolled back)", v, n)
	}
}

func TestLoadMigrationsRejectsGaps(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":        {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		"duplicate":  {"migrations/0001_a.sql": {}, "migrations/0001_b.sql": {}},
		"unnumbered": {"migrations/init.sql": {}},
	} {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: loadMigrations accepted it", name)
		}
	}
}
