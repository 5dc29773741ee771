// Package store keeps agentls sessions durably in one SQLite database per
// workspace: sessions, tasks, their messages in order, plan updates,
// tool calls, edits, approvals and the lessons of failed tasks.
//
// Writes are made as a task runs. Each write method only enqueues: one writer
// goroutine owns the single writer connection and commits what is queued in
// batches, so the agent loop never waits on the disk for long. Flush and Close
// drain the queue deterministically: when Flush returns nil, every write
// enqueued before it is committed. A process crash loses at most the writes
// still queued, which is the message in flight when the loop flushes at its
// checkpoints (see docs/sessions.md).
//
// Reads go through a small pool of read-only connections and first flush the
// queue, so a reader sees every write its goroutine enqueued before the read.
//
// The store is a leaf: of agentls it imports only agent/redact. It defines
// the types it persists (messages, usage, plans as JSON, decisions by name),
// and the agent converts its own types to and from them.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go)
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("store is closed")

// ErrNotFound is returned when a task or session does not exist.
var ErrNotFound = errors.New("not found")

// DefaultPath is where the database of a workspace lives by default.
func DefaultPath(workspaceRoot string) string {
	return filepath.Join(workspaceRoot, ".agentls", "agentls.db")
}

// Options tune a Store. The zero value is usable.
type Options struct {
	// QueueSize bounds the write queue; a write method blocks while the
	// queue is full (back pressure instead of unbounded memory). Default 4096.
	QueueSize int
	// Readers is the size of the read-only connection pool. Default 4.
	Readers int
	// BusyTimeout is how long a connection waits for a lock. Default 5 s.
	BusyTimeout time.Duration
	// MaxBatch bounds how many queued writes share one transaction. Default 256.
	MaxBatch int
	// Now returns the current time (tests pin it). Default time.Now.
	Now func() time.Time
	// Secrets returns the values (the API key) to redact from every text
	// the store writes (redact.Redactor), except the before/after texts of
	// edits, which undo must restore byte for byte. Nil means none.
	Secrets func() []string
}

func (o *Options) fill() {
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Store is the session database of one workspace. It is safe for concurrent
// use. Open it once per process and Close it before exit.
type Store struct {
	path string
	opts Options
	w    *sql.DB // the writer: one connection, used only by the writer goroutine and Open
	r    *sql.DB // read-only pool

	// mu guards closed and sends on queue: senders hold the read lock while
	// sending, Close takes the write lock to close the channel.
	mu     sync.RWMutex
	closed bool
	queue  chan op

	done     chan struct{} // closed when the writer goroutine has exited and the databases are closed
	closeErr error         // set by the writer goroutine before done is closed
}

// op is one queued unit of work for the writer goroutine: a write, or a
// barrier (fn nil) that reports the errors seen since the previous barrier.
type op struct {
	what    string
	fn      func(ctx context.Context, tx *sql.Tx) error
	barrier chan error
	peek    bool // a barrier for a read: answer nil and keep the errors for Flush
}

// Open opens (creating it and its directory if needed) the database at path,
// migrates its schema to the newest version and starts the writer goroutine.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	opts.fill()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	busy := fmt.Sprint(opts.BusyTimeout.Milliseconds())

	wq := url.Values{}
	wq.Set("_busy_timeout", busy)
	wq.Set("_journal_mode", "WAL")
	wq.Set("_synchronous", "NORMAL") // in WAL mode: durable against process crashes
	wq.Set("_foreign_keys", "1")
	wq.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", fileURI(abs, wq))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, w, len(migrations)); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}

	rq := url.Values{}
	rq.Set("mode", "ro")
	rq.Set("_busy_timeout", busy)
	rq.Set("_query_only", "1")
	rq.Set("_foreign_keys", "1")
	r, err := sql.Open("sqlite", fileURI(abs, rq))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store readers %s: %w", abs, err)
	}
	r.SetMaxOpenConns(opts.Readers)
	r.SetMaxIdleConns(opts.Readers)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store readers %s: %w", abs, err)
	}

	s := &Store{
		path:  abs,
		opts:  opts,
		w:     w,
		r:     r,
		queue: make(chan op, opts.QueueSize),
		done:  make(chan struct{}),
	}
	go s.writer()
	return s, nil
}

// fileURI builds a file: URI, so SQLite's own parameters (mode=ro) apply.
func fileURI(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// enqueue hands one write to the writer goroutine. It blocks only while the
// queue is full.
func (s *Store) enqueue(what string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("%s: %w", what, ErrClosed)
	}
	s.queue <- op{what: what, fn: fn}
	return nil
}

// Flush waits until every write enqueued before it is committed. It returns
// the errors of the writes that failed since the previous Flush (each failed
// write is named), or ctx's error if ctx ends first.
func (s *Store) Flush(ctx context.Context) error {
	return s.barrier(ctx, false)
}

func (s *Store) barrier(ctx context.Context, peek bool) error {
	ch := make(chan error, 1)
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("flush: %w", ErrClosed)
	}
	select {
	case s.queue <- op{what: "flush", barrier: ch, peek: peek}:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return fmt.Errorf("flush: %w", ctx.Err())
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return fmt.Errorf("flush: %w", ctx.Err())
	}
}

// Close stops accepting writes, drains the queue (every write enqueued before
// Close is committed), checkpoints the WAL into the database file and closes
// the connections. It returns the errors of writes that failed since
// the last Flush. If ctx ends first, Close returns ctx's error and the writer
// goroutine still finishes the drain and closes the database on its own.
// Calling Close again returns the first result.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		return s.closeErr
	case <-ctx.Done():
		return fmt.Errorf("close store: %w", ctx.Err())
	}
}

// writer is the only goroutine that writes. It exits when the queue is closed
// and empty, after closing both databases.
func (s *Store) writer() {
	ctx := context.Background()
	var pending []error
	batch := make([]op, 0, s.opts.MaxBatch)
	for first := range s.queue {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		// Commit writes up to each barrier before answering it.
		start := 0
		for i, o := range batch {
			if o.barrier == nil {
				continue
			}
			pending = append(pending, s.commit(ctx, batch[start:i])...)
			start = i + 1
			if o.peek {
				o.barrier <- nil
				continue
			}
			o.barrier <- errors.Join(pending...)
			pending = nil
		}
		pending = append(pending, s.commit(ctx, batch[start:])...)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		pending = append(pending, fmt.Errorf("checkpoint: %w", err))
	}
	if err := s.r.Close(); err != nil {
		pending = append(pending, fmt.Errorf("close readers: %w", err))
	}
	if err := s.w.Close(); err != nil {
		pending = append(pending, fmt.Errorf("close writer: %w", err))
	}
	s.closeErr = errors.Join(pending...)
	close(s.done)
}

// commit runs writes in one transaction. If that fails, it runs each write in
// a transaction of its own, so one bad write (say, a message for a task that
// does not exist) does not take the others with it. It returns one error per
// failed write.
func (s *Store) commit(ctx context.Context, ops []op) []error {
	if len(ops) == 0 {
		return nil
	}
	if err := s.inTx(ctx, ops); err == nil {
		return nil
	} else if len(ops) == 1 {
		return []error{err}
	}
	var errs []error
	for i := range ops {
		if err := s.inTx(ctx, ops[i:i+1]); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (s *Store) inTx(ctx context.Context, ops []op) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for _, o := range ops {
		if err := o.fn(ctx, tx); err != nil {
			tx.Rollback()
			return fmt.Errorf("%s: %w", o.what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// reader flushes pending writes and returns the read-only pool.
func (s *Store) reader(ctx context.Context) (*sql.DB, error) {
	// Write errors stay queued for the next Flush or Close: a reader reads
	// what was committed.
	if err := s.barrier(ctx, true); err != nil {
		return nil, err
	}
	return s.r, nil
}

// ms converts a time to the Unix milliseconds stored in the database.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS converts stored Unix milliseconds back; 0 is the zero time.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// Check runs SQLite's integrity check and returns an error describing any
// corruption it finds.
func (s *Store) Check(ctx context.Context) error {
	db, err := s.reader(ctx)
	if err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return fmt.Errorf("integrity check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := closeRows(rows); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	return nil
}
