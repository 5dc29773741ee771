// Package recorder is the model flight recorder: it appends every model
// call of a task (llm.Exchange: request as sent, answer, usage, timing,
// failures) as one JSON line to <dir>/<name>.jsonl, rotating the file when
// it grows past a cap and pruning the directory's oldest recordings past a
// total cap. Lines never hold the API key: the client removes it, and the
// recorder replaces any configured secret again before writing.
package recorder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/workspace/ownfs"
)

// Defaults for Options left zero.
const (
	DefaultMaxFileBytes = 8 << 20
	DefaultMaxFiles     = 3
	DefaultMaxDirBytes  = 64 << 20
)

// Options caps what the recorder keeps.
type Options struct {
	MaxFileBytes int64    // rotate the file before it passes this size
	MaxFiles     int      // files kept per recording, the current one included
	MaxDirBytes  int64    // total size of *.jsonl in the directory; oldest removed first
	Secrets      []string // strings replaced by [redacted] in every line (e.g. the API key), besides secrets of a known shape (agent/redact)
}

// Recorder appends exchanges to one recording. It is safe for concurrent
// use and implements llm.Recorder.
type Recorder struct {
	dir, name string
	d         *ownfs.Dir // dir, held open: no link in it is followed
	opts      Options

	mu   sync.Mutex // guards f and size
	f    *os.File
	size int64
}

var safeName = lazyregexp.New(`[^A-Za-z0-9._-]+`)

// Open creates dir if needed and opens (appending) <dir>/<name>.jsonl,
// following no link at dir's last name or in it.
func Open(dir, name string, opts Options) (*Recorder, error) {
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	return OpenIn(filepath.Dir(dir), filepath.Base(dir), name, opts)
}

// OpenIn is Open of the folder rel (slash-separated) below base, following
// no link below base: a workspace's .agentls/recordings.
func OpenIn(base, rel, name string, opts Options) (*Recorder, error) {
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxDirBytes <= 0 {
		opts.MaxDirBytes = DefaultMaxDirBytes
	}
	name = safeName.ReplaceAllString(name, "_")
	if name == "" {
		return nil, errors.New("recorder: empty recording name")
	}
	d, err := ownfs.Open(base, rel, true, 0o700)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r := &Recorder{dir: d.Path(), name: name, d: d, opts: opts}
	if err := r.open(); err != nil {
		d.Close()
		return nil, err
	}
	return r, nil
}

// Path is the file currently written.
func (r *Recorder) Path() string { return filepath.Join(r.dir, r.file()) }

func (r *Recorder) file() string { return r.name + ".jsonl" }

func (r *Recorder) open() error {
	f, err := r.d.OpenFile(r.file(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("recorder: %w", err)
	}
	r.f, r.size = f, st.Size()
	return nil
}

// imageURL is an image sent inline in a request body (a data: URL of an
// image_url part), its base64 data as JSON writes it.
var imageURL = lazyregexp.New(`"data:(image/[A-Za-z0-9.+-]+);base64,((?:[A-Za-z0-9+/=]|\\[rn])*)"`)

// withoutImageData is a request body with each inline image's data
// replaced by its type and size: a recording is a log, and an image is
// data the session store keeps, not text to repeat in every line of a
// task's calls.
func withoutImageData(body json.RawMessage) json.RawMessage {
	if !bytes.Contains(body, []byte(`"data:image/`)) {
		return body
	}
	return imageURL.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := imageURL.FindSubmatch(m)
		data := bytes.ReplaceAll(bytes.ReplaceAll(sub[2], []byte(`\n`), nil), []byte(`\r`), nil)
		n := len(data) / 4 * 3
		n -= bytes.Count(data[max(0, len(data)-2):], []byte("="))
		return []byte(fmt.Sprintf(`"[image: %s, %d bytes, not recorded]"`, sub[1], n))
	})
}

// Record appends x as one JSON line. An image's data in the request is
// not recorded, only its type and size.
func (r *Recorder) Record(x llm.Exchange) error {
	x.Request = withoutImageData(x.Request)
	line, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	if int64(len(line)) > r.opts.MaxFileBytes/4 && len(x.Request) > 0 {
		// One request must not take the recording's room: it is noted
		// by its size.
		x.Request = json.RawMessage(fmt.Sprintf(`{"agentls_not_recorded_bytes":%d}`, len(x.Request)))
		if line, err = json.Marshal(x); err != nil {
			return fmt.Errorf("recorder: %w", err)
		}
	}
	line = append(redact.New(r.opts.Secrets...).JSON(line), '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return errors.New("recorder: closed")
	}
	if r.size > 0 && r.size+int64(len(line)) > r.opts.MaxFileBytes {
		if err := r.rotate(); err != nil {
			return err
		}
	}
	n, err := r.f.Write(line)
	r.size += int64(n)
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	return nil
}

// rotate shifts name.jsonl to name.1.jsonl (and so on, dropping the
// oldest), reopens a fresh file, then prunes the directory.
func (r *Recorder) rotate() error {
	r.f.Close()
	r.f = nil
	backup := func(i int) string { return fmt.Sprintf("%s.%d.jsonl", r.name, i) }
	r.d.Remove(backup(r.opts.MaxFiles - 1))
	for i := r.opts.MaxFiles - 2; i >= 1; i-- {
		r.d.Rename(backup(i), backup(i+1))
	}
	if r.opts.MaxFiles > 1 {
		if err := r.d.Rename(r.file(), backup(1)); err != nil {
			return fmt.Errorf("recorder: rotate: %w", err)
		}
	} else {
		r.d.Remove(r.file())
	}
	if err := r.open(); err != nil {
		return err
	}
	return r.prune()
}

// prune removes the oldest *.jsonl files of the directory (never the
// current one) until the total fits MaxDirBytes.
func (r *Recorder) prune() error {
	entries, err := r.d.ReadDir(".")
	if err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	type file struct {
		path string
		size int64
		mod  int64
	}
	var files []file
	var total int64
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		total += info.Size()
		p := e.Name()
		if p != r.file() {
			files = append(files, file{p, info.Size(), info.ModTime().UnixNano()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod < files[j].mod })
	for _, f := range files {
		if total <= r.opts.MaxDirBytes {
			break
		}
		if r.d.Remove(f.path) == nil {
			total -= f.size
		}
	}
	return nil
}

// Close closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.d != nil {
		r.d.Close()
		r.d = nil
	}
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Read parses a recording; a torn last line (a crash mid-write) is skipped.
func Read(rd io.Reader) ([]llm.Exchange, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	var out []llm.Exchange
	var pending error
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if pending != nil {
			return nil, pending
		}
		var x llm.Exchange
		if err := json.Unmarshal(line, &x); err != nil {
			pending = fmt.Errorf("recording line %d: %w", n, err)
			continue
		}
		out = append(out, x)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadFile parses the recording at path.
func ReadFile(path string) ([]llm.Exchange, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
