package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/agentls/agentls/workspace"
)

type readFileArgs struct {
	Path   string `json:"path" desc:"file to read (workspace-relative)"`
	Offset int    `json:"offset,omitempty" desc:"first line to show, 1-based; default 1"`
	Limit  int    `json:"limit,omitempty" desc:"number of lines to show; default 2000"`
}

// ReadFileOutput is the Data of a read_file Result.
type ReadFileOutput struct {
	Path        string
	First, Last int // lines shown (1-based, inclusive); 0, 0 for an empty file
	Total       int // lines in the file
	FromBuffer  bool
	Version     int32
	Hash        string // of the whole text read ("" for a file read in parts)
}

const (
	readDefaultLimit = 2000
	readMaxLineLen   = 2000      // bytes; longer lines are cut
	readMaxBytes     = 200 << 10 // of output
	readMaxLarge     = 1 << 30   // files read in parts up to this size
)

func newReadFile(r *Registry) Tool {
	return newTool("read_file", 0, func(ctx context.Context, a *readFileArgs) (Result, error) {
		return r.readFile(ctx, a)
	})
}

func (r *Registry) readFile(ctx context.Context, a *readFileArgs) (Result, error) {
	w := r.env.Workspace
	p, res := r.resolve(a.Path)
	if res != nil {
		return *res, nil
	}
	if a.Offset < 0 || a.Limit < 0 {
		return errorf("offset and limit must be positive (offset is 1-based)"), nil
	}
	if SecretPath(p) {
		if res, err := r.approve(ctx, ApprovalRequest{Tool: "read_file", Summary: secretSummary("read", p), Path: p.String(), Secret: true}); res != nil || err != nil {
			if res != nil {
				return *res, nil
			}
			return Result{}, err
		}
	}
	offset := max(a.Offset, 1)
	limit := a.Limit
	if limit == 0 {
		limit = readDefaultLimit
	}
	f, err := w.ReadFile(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, workspace.ErrTooLarge):
		return r.readLarge(ctx, p, offset, limit)
	case errors.Is(err, workspace.ErrNotExist):
		return errorf("no such file: %s%s", p, r.suggest(p)), nil
	case errors.Is(err, workspace.ErrIsDir):
		return errorf("%s is a folder, not a file: use list_files with path=%q", p, p.String()), nil
	case errors.Is(err, workspace.ErrBinary):
		return errorf("%v; read_file shows text files only", err), nil
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	default:
		return errorf("cannot read %s: %v", p, err), nil
	}
	lines := splitLines(f.Text)
	out := &ReadFileOutput{Path: p.String(), Total: len(lines), FromBuffer: f.FromBuffer, Version: f.Version, Hash: f.Hash}
	src := ""
	if f.FromBuffer {
		src = fmt.Sprintf(", from the editor's buffer (version %d, unsaved changes included)", f.Version)
	}
	if len(lines) == 0 {
		return Result{Text: fmt.Sprintf("%s is empty (0 lines%s)", p, src), Files: []string{p.String()}, Data: out}, nil
	}
	if offset > len(lines) {
		return errorf("offset %d is past the end: %s has %d lines", offset, p, len(lines)), nil
	}
	body, last := numberLines(lines[offset-1:], offset, limit)
	out.First, out.Last = offset, last
	return Result{Text: header(p.String(), offset, last, len(lines), src) + body, Files: []string{p.String()}, Data: out}, nil
}

func header(name string, first, last, total int, src string) string {
	h := fmt.Sprintf("%s (lines %d-%d of %d%s)\n", name, first, last, total, src)
	if last < total {
		h = fmt.Sprintf("%s (lines %d-%d of %d%s; read on with offset=%d)\n", name, first, last, total, src, last+1)
	}
	return h
}

// splitLines splits text into lines without their "\n" or "\r\n"; a final
// line break does not start another line.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// numberLines renders up to limit lines starting at number first, within
// the output byte budget, and returns the text and the last line shown.
func numberLines(lines []string, first, limit int) (string, int) {
	var b strings.Builder
	last := first - 1
	for i, l := range lines {
		if i == limit || b.Len() > readMaxBytes {
			break
		}
		writeNumbered(&b, first+i, l)
		last = first + i
	}
	return b.String(), last
}

func writeNumbered(b *strings.Builder, n int, l string) {
	cut := 0
	if len(l) > readMaxLineLen {
		end := readMaxLineLen
		for end > 0 && !utf8.RuneStart(l[end]) {
			end--
		}
		cut = len(l) - end
		l = l[:end]
	}
	fmt.Fprintf(b, "%6d\t%s", n, l)
	if cut > 0 {
		fmt.Fprintf(b, " … [line cut: %d more bytes]", cut)
	}
	b.WriteByte('\n')
}

// readLarge reads lines offset..offset+limit-1 of a file over the workspace
// read limit straight from disk, counting all its lines.
func (r *Registry) readLarge(ctx context.Context, p workspace.Path, offset, limit int) (Result, error) {
	fh, fi, err := r.env.Workspace.Open(p)
	if err != nil {
		return errorf("cannot read %s: %v", p, err), nil
	}
	defer fh.Close()
	if fi.Size() > readMaxLarge {
		return errorf("%s is %d bytes, too large to read even in parts; use grep with path=%q to find what you need", p, fi.Size(), p.String()), nil
	}
	br := bufio.NewReaderSize(fh, 256<<10)
	head, _ := br.Peek(8000)
	if bytes.IndexByte(head, 0) >= 0 {
		return errorf("%s is a binary file (%d bytes); read_file shows text files only", p, fi.Size()), nil
	}
	var b strings.Builder
	n, last := 0, 0
	for {
		if n%4096 == 0 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		line, err := br.ReadSlice('\n')
		full := line
		for err == bufio.ErrBufferFull { // a very long line: keep its start only
			var more []byte
			more, err = br.ReadSlice('\n')
			if len(full) < readMaxLineLen+1 {
				full = append(append([]byte(nil), full...), more...)
			}
		}
		if len(line) == 0 && err == io.EOF {
			break
		}
		n++
		if n >= offset && n < offset+limit && b.Len() <= readMaxBytes {
			s := strings.TrimSuffix(strings.TrimSuffix(string(full), "\n"), "\r")
			writeNumbered(&b, n, s)
			last = n
		}
		if err != nil {
			break
		}
	}
	if offset > n {
		return errorf("offset %d is past the end: %s has %d lines", offset, p, n), nil
	}
	src := fmt.Sprintf(", a large file (%d bytes) read from disk in parts", fi.Size())
	out := &ReadFileOutput{Path: p.String(), First: offset, Last: last, Total: n}
	return Result{Text: header(p.String(), offset, last, n, src) + b.String(), Files: []string{p.String()}, Data: out}, nil
}

// suggest names indexed files with the same base name as a missing path.
func (r *Registry) suggest(p workspace.Path) string {
	base := path.Base(p.String())
	var found []string
	for _, q := range r.env.Workspace.Files() {
		if path.Base(q.String()) == base {
			found = append(found, q.String())
			if len(found) == 5 {
				break
			}
		}
	}
	if len(found) == 0 {
		return " (list_files or grep can find the right path)"
	}
	return "; files with that name: " + strings.Join(found, ", ")
}

// presentReadFile: "Read a.go", at the first line shown; the text read is
// not repeated where the call is shown.
func presentReadFile(a *readFileArgs, res *Result) Presentation {
	p := Presentation{Title: "Read " + a.Path, Activity: "reading " + shown(a.Path), Kind: KindRead,
		Locations: at(a.Path, a.Offset), Show: ShowLine}
	if res != nil {
		if out, ok := res.Data.(*ReadFileOutput); ok && out.First > 0 && len(p.Locations) == 1 {
			p.Locations[0].Line = out.First
		}
	}
	return p
}
