package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentls/agentls/agent/completion"
	"github.com/agentls/agentls/agent/ctxgate"
	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/workspace"
)

// The completion eval: holes cut from the fixtures' source files (the rest
// of a line, from a token boundary past its first part), each completed
// by the inline completion engine as an editor would ask it (the file open
// with the rest of the line gone, the fixture's other sources open beside
// it), and scored by exact match (the rest of the line, spaces aside) and
// prefix match (a non-empty start of it: the user accepts part of the
// suggestion).

// Hole is one completion to make.
type Hole struct {
	Fixture string `json:"fixture"`
	File    string `json:"file"`
	Line    int    `json:"line"` // 0-based
	Column  int    `json:"column"`
	Want    string `json:"want"`
	text    string // the file with the hole cut
}

// Name identifies the hole: fixture/file:line.
func (h Hole) Name() string { return fmt.Sprintf("%s/%s:%d", h.Fixture, h.File, h.Line+1) }

// holeEvery keeps one eligible line in this many.
const holeEvery = 5

// sourceExts are the files holes are cut from.
var sourceExts = []string{".go", ".py", ".ts", ".js"}

// Holes cuts the holes of a fixture (its files by path), in file and line
// order: every holeEvery-th line of code long enough to complete (not a
// comment, not blank), cut at the first token boundary past 40% of its
// text, where a completion stays on the line.
func Holes(fixture string, files map[string][]byte) []Hole {
	names := make([]string, 0, len(files))
	for n := range files {
		if slices.Contains(sourceExts, path.Ext(n)) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []Hole
	for _, n := range names {
		text := string(files[n])
		lines := strings.Split(text, "\n")
		eligible := 0
		offset := 0
		for i, line := range lines {
			start := offset
			offset += len(line) + 1
			code := strings.TrimSpace(line)
			if len(code) < 12 || strings.HasPrefix(code, "//") || strings.HasPrefix(code, "#") ||
				strings.HasPrefix(code, "*") || strings.HasPrefix(code, "/*") || strings.HasPrefix(code, `"""`) {
				continue
			}
			eligible++
			if eligible%holeEvery != 0 {
				continue
			}
			col := cutAt(line)
			if col < 0 {
				continue
			}
			want := strings.TrimRight(line[col:], " \t\r")
			cut := text[:start+col] + text[start+len(line):]
			out = append(out, Hole{Fixture: fixture, File: n, Line: i, Column: col, Want: want, text: cut})
		}
	}
	return out
}

// cutAt is where a line is cut: after the first non-word character past
// 40% of its text, leaving at least 3 characters to complete; -1 when no
// such place is, or the text before it would open a block (the completion
// would span lines).
func cutAt(line string) int {
	indent := len(line) - len(strings.TrimLeft(line, " \t"))
	rest := strings.TrimRight(line, " \t\r")
	from := indent + (len(rest)-indent)*2/5
	for i := from; i < len(rest)-3; i++ {
		c := rest[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			before := strings.TrimSpace(rest[:i+1])
			for _, end := range []string{"{", ":", "(", "["} {
				if strings.HasSuffix(before, end) && strings.TrimSpace(rest[i+1:]) == "" {
					return -1
				}
			}
			if strings.HasSuffix(before, "{") || strings.HasSuffix(before, ":") {
				continue
			}
			return i + 1
		}
	}
	return -1
}

// CompletionOptions configure RunCompletion.
type CompletionOptions struct {
	Suite    fs.FS
	Settings session.Settings // the model endpoint and the completion setting
	Getenv   func(string) string
	// Scripted answers each hole with a scripted model: the rest of the
	// line, and for every fourth hole its first half (a prefix match that
	// is not exact), so the scores are known in advance (tests the
	// harness; no model service).
	Scripted bool
	Only     *regexp.Regexp // holes whose name matches; nil: all
	Progress io.Writer
}

// CompletionResult is one hole's outcome.
type CompletionResult struct {
	Hole
	Got    string  `json:"got"`
	Exact  bool    `json:"exact"`
	Prefix bool    `json:"prefix"`
	Ms     float64 `json:"ms"`
	Sent   int     `json:"sentBytes"`
	Error  string  `json:"error,omitempty"`
}

// CompletionReport is the completion eval's result.
type CompletionReport struct {
	Model    string             `json:"model"`
	Scripted bool               `json:"scripted"`
	Holes    int                `json:"holes"`
	Exact    int                `json:"exact"`
	Prefix   int                `json:"prefix"`
	Failed   int                `json:"failed"`
	SentAvg  float64            `json:"sentBytesAvg"`
	MsP50    float64            `json:"msP50"`
	Results  []CompletionResult `json:"results"`
	// Want are the scores the script makes (Scripted only).
	WantExact, WantPrefix int `json:"-"`
}

// RunCompletion runs the completion eval.
func RunCompletion(ctx context.Context, opts CompletionOptions) (*CompletionReport, error) {
	fixtures, err := fs.Glob(opts.Suite, "fixtures/*.txtar")
	if err != nil {
		return nil, err
	}
	sort.Strings(fixtures)
	var holes []Hole
	var all = map[string]map[string][]byte{}
	for _, f := range fixtures {
		name := strings.TrimSuffix(path.Base(f), ".txtar")
		files, err := loadFixture(opts.Suite, name)
		if err != nil {
			return nil, err
		}
		all[name] = files
		for _, h := range Holes(name, files) {
			if opts.Only == nil || opts.Only.MatchString(h.Name()) {
				holes = append(holes, h)
			}
		}
	}
	if len(holes) == 0 {
		return nil, fmt.Errorf("no holes to complete")
	}
	s := opts.Settings
	rep := &CompletionReport{Scripted: opts.Scripted, Holes: len(holes)}
	if opts.Scripted {
		var turns []fakemodel.Turn
		for i, h := range holes {
			text := h.Want
			if i%4 == 3 {
				text = text[:len(text)/2]
			} else {
				rep.WantExact++
			}
			if strings.TrimSpace(text) != "" {
				rep.WantPrefix++
			}
			turns = append(turns, fakemodel.Turn{Match: &fakemodel.Match{Request: i + 1}, Text: text})
		}
		srv, err := fakemodel.Start(fakemodel.Script{Turns: turns})
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		s.BaseURL, s.Model = srv.URL(), "scripted-chat"
		s.Completion.Model = "scripted-fim"
	}
	client, err := llm.New(s.ModelConfig(opts.Getenv))
	if err != nil {
		return nil, fmt.Errorf("model configuration: %w", err)
	}
	rep.Model = s.Completion.Model
	if rep.Model == "" {
		rep.Model = s.Model + " (chat)"
	}
	cfg := completion.Config{
		Model:     s.Completion.Model,
		Timeout:   time.Duration(s.Completion.TimeoutMs) * time.Millisecond,
		MaxTokens: s.Completion.MaxTokens,
	}
	engine := completion.New()
	var lat []float64
	var sent int
	for _, h := range holes {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		env := completion.Env{Model: client, Gate: ctxgate.New("", redactorOf(s, opts.Getenv)),
			Others: func() []completion.Document { return others(all[h.Fixture], h.File) }}
		pos := workspace.Position{Line: uint32(h.Line), Character: workspace.UTF16Len(strings.Split(h.text, "\n")[h.Line][:h.Column])}
		req := completion.Request{Doc: completion.Document{Name: "/" + h.Fixture + "/" + h.File, Version: 1, Text: h.text},
			Position: pos, Invoked: true}
		t0 := time.Now()
		a, err := engine.Complete(ctx, cfg, env, req)
		r := CompletionResult{Hole: h, Got: a.Text, Ms: float64(time.Since(t0).Microseconds()) / 1000, Sent: a.Sent}
		if err != nil {
			r.Error = err.Error()
			rep.Failed++
		}
		got := strings.TrimRight(a.Text, " \t")
		r.Exact = strings.TrimSpace(got) == strings.TrimSpace(h.Want) && strings.TrimSpace(got) != ""
		r.Prefix = strings.TrimSpace(got) != "" && strings.HasPrefix(h.Want, got)
		if r.Exact {
			rep.Exact++
		}
		if r.Prefix || r.Exact {
			rep.Prefix++
		}
		lat = append(lat, r.Ms)
		sent += r.Sent
		rep.Results = append(rep.Results, r)
		if opts.Progress != nil {
			mark := "miss"
			switch {
			case r.Exact:
				mark = "exact"
			case r.Prefix:
				mark = "prefix"
			case r.Error != "":
				mark = "error: " + r.Error
			}
			fmt.Fprintf(opts.Progress, "%-28s %-6s %q\n", h.Name(), mark, clip(a.Text, 60))
		}
	}
	slices.Sort(lat)
	rep.MsP50 = lat[len(lat)/2]
	rep.SentAvg = float64(sent) / float64(len(holes))
	return rep, nil
}

func redactorOf(s session.Settings, getenv func(string) string) redact.Redactor {
	var c session.RedactorCache
	return c.Get(s, getenv)
}

// others are the fixture's other source files, as open documents.
func others(files map[string][]byte, except string) []completion.Document {
	var out []completion.Document
	for n, b := range files {
		if n != except && slices.Contains(sourceExts, path.Ext(n)) {
			out = append(out, completion.Document{Name: "/" + n, Version: 1, Text: string(b)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// WriteTable writes the report as a table.
func (r *CompletionReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	pct := func(n int) string { return fmt.Sprintf("%d (%.0f%%)", n, 100*float64(n)/float64(max(r.Holes, 1))) }
	fmt.Fprintf(tw, "model\tholes\texact\tprefix\tfailed\tsent B/hole\tp50 ms\n")
	fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%.0f\t%.1f\n", r.Model, r.Holes, pct(r.Exact), pct(r.Prefix), r.Failed, r.SentAvg, r.MsP50)
	return tw.Flush()
}

// WriteJSON writes the report to path.
func (r *CompletionReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
