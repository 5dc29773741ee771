package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// migrationFS holds the schema, one numbered SQL file per version:
// migrations/0001_core.sql is version 1, and so on. A released file is never
// edited; a change of schema is a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded steps in version order; Open checks at init
// that they are numbered 1..n without gaps.
var migrations = mustLoadMigrations()

func mustLoadMigrations() []migration {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		panic(err)
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", n)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d (no gaps, no duplicates)", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int { return len(migrations) }

// schemaVersion reads PRAGMA user_version, where the applied version lives.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrate applies every step above the database's version up to target, each
// in its own transaction together with the new user_version, so a failed
// step leaves the database at the previous version. A database newer than
// this build is refused rather than misread.
func migrate(ctx context.Context, db *sql.DB, target int) error {
	cur, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if cur > len(migrations) {
		return fmt.Errorf("database schema is version %d, newer than this agentls (version %d): upgrade agentls", cur, len(migrations))
	}
	for _, m := range migrations[cur:target] {
		if err := applyMigration(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	defer tx.Rollback()
	// Another process may have migrated while we waited for the lock.
	cur, err := schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if cur >= m.version {
		return nil
	}
	if cur != m.version-1 {
		return fmt.Errorf("migration %s: database is at version %d", m.name, cur)
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return fmt.Errorf("migration %s: set version: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.name, err)
	}
	return nil
}
