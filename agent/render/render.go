// Package render makes model-written markdown inert where an editor renders
// it: a markdown preview fetches remote images as soon as it shows them, and
// a link whose URL carries a query or a fragment hands its data to whoever
// clicks it. Text the model writes (a task's answer, its report, the chunks
// streamed to an ACP client) passes through Inert or a Stream before any
// face shows it; the model's own messages in the history stay as written.
//
// What stays live is an allowlist: images with a local destination (a
// relative path, or a file: URL on this machine), links with a local
// destination or a plain http(s)/mailto URL with no user information, query
// or fragment, and attribute-less HTML tags of a small set (<b>, <br>,
// <details>...). Everything else is shown as text: the URL in a code span
// with a note ("[remote image not loaded]", "[link not rendered]"), raw
// HTML with its "<" escaped, link reference definitions with their "["
// escaped.
//
// The markdown is parsed with goldmark (CommonMark and GFM, as the editors'
// previews parse it) rather than matched with regular expressions: nesting,
// code spans, fenced code, reference definitions and escapes decide what is
// an image, and a parser knows them. goldmark records where each node
// starts; where a link or image ends is recorded by wrapping its link
// parser. After rewriting, the result is parsed again and rewritten until
// nothing live is left; text that does not settle in a few passes is shown
// whole as a fenced code block. The invariant, checked by a fuzz test: the
// output parses to no remote image, no link that is not allowed, no raw
// HTML outside the allowlist and no reference definition of a remote URL.
package render

import (
	"bytes"
	"html"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Notes shown beside what is not rendered.
const (
	NoteImage = `\[remote image not loaded\]`
	NoteLink  = `\[link not rendered\]`
)

// maxPasses bounds the rewrite passes before the whole text is fenced.
const maxPasses = 6

// Inert returns md with every remote image, every link that is not allowed
// and every raw HTML tag outside the allowlist shown as text. Text with
// nothing of the kind is returned unchanged.
func Inert(md string) string {
	out := md
	for range maxPasses {
		fixes := scan([]byte(out))
		if len(fixes) == 0 {
			return out
		}
		out = apply(out, fixes)
	}
	if len(scan([]byte(out))) == 0 {
		return out
	}
	return Fenced(md)
}

// Live reports whether md holds anything Inert would change: a remote
// image, a link that is not allowed, raw HTML outside the allowlist, a
// reference definition of a remote URL.
func Live(md string) bool { return len(scan([]byte(md))) > 0 }

// Fenced is s as a fenced code block (a fence longer than any run of
// backticks in s), preceded by a blank line so that it starts a block
// whatever comes before it. Nothing in a code block is rendered.
func Fenced(s string) string {
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	s = strings.TrimRight(s, "\n")
	return "\n\n" + fence + "text\n" + s + "\n" + fence + "\n"
}

// Cell is s as one cell of a markdown table row: its pipes escaped, its
// line breaks and backticks replaced, so it neither ends the cell nor the
// row.
func Cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

// Escaped is s with every ASCII punctuation character backslash-escaped:
// text that forms no markdown construct and closes none, whatever comes
// before it (inside an open code block it shows its backslashes).
func Escaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isASCIIPunct(s[i]) {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fix replaces src[start:end] with text.
type fix struct {
	start, end int
	text       string
}

func apply(src string, fixes []fix) string {
	sort.SliceStable(fixes, func(i, j int) bool { return fixes[i].start < fixes[j].start })
	var b strings.Builder
	last := 0
	for _, f := range fixes {
		if f.start < last || f.end < f.start || f.end > len(src) {
			continue // overlaps an outer fix; the next pass sees it again
		}
		b.WriteString(src[last:f.start])
		b.WriteString(f.text)
		last = f.end
	}
	b.WriteString(src[last:])
	return b.String()
}

// linkEnds is the parser context key of the map from link and image nodes
// to the offset just past their source.
var linkEnds = parser.NewContextKey()

// endRecorder wraps goldmark's link parser and records where each link or
// image it closes ends: the reader stands just past it when Parse returns.
type endRecorder struct {
	parser.InlineParser
}

func (r endRecorder) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	n := r.InlineParser.Parse(parent, block, pc)
	switch n.(type) {
	case *ast.Link, *ast.Image:
		if m, ok := pc.Get(linkEnds).(map[ast.Node]int); ok {
			_, seg := block.Position()
			m[n] = seg.Start
		}
	}
	return n
}

func (r endRecorder) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	if cb, ok := r.InlineParser.(parser.CloseBlocker); ok {
		cb.CloseBlock(parent, block, pc)
	}
}

// markdown is the parser, built on first use (not at start: a process that
// renders nothing, such as agentls tool, does not pay for it).
var markdown = sync.OnceValue(func() goldmark.Markdown {
	inline := parser.DefaultInlineParsers()
	for i, p := range inline {
		if p.Priority == 200 { // the link parser
			inline[i] = util.Prioritized(endRecorder{parser.NewLinkParser()}, 200)
		}
	}
	p := parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(inline...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
	return goldmark.New(goldmark.WithParser(p), goldmark.WithExtensions(extension.GFM))
})

// scan parses src and returns the fixes of one pass: outermost nodes first,
// nothing inside a node that is replaced whole.
func scan(src []byte) []fix {
	pc := parser.NewContext()
	ends := map[ast.Node]int{}
	pc.Set(linkEnds, ends)
	doc := markdown().Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	var fixes []fix
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Image:
			if localURL(n.Destination) {
				return ast.WalkContinue, nil
			}
			fixes = append(fixes, inertLink(src, n, ends, '!', n.Destination, NoteImage, ": "))
			return ast.WalkSkipChildren, nil
		case *ast.Link:
			if linkAllowed(n.Destination) {
				return ast.WalkContinue, nil
			}
			fixes = append(fixes, inertLink(src, n, ends, '[', n.Destination, NoteLink, " "))
			return ast.WalkSkipChildren, nil
		case *ast.AutoLink:
			u := n.URL(src)
			if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(u), []byte("mailto:")) {
				u = append([]byte("mailto:"), u...)
			}
			if linkAllowed(u) {
				return ast.WalkContinue, nil
			}
			l := n.Label(src)
			if len(l) == 0 {
				fixes = append(fixes, blockFix(src, n))
				return ast.WalkSkipChildren, nil
			}
			start := cap(src) - cap(l) // l is a slice of src
			end := start + len(l)
			if start > 0 && src[start-1] == '<' && end < len(src) && src[end] == '>' {
				start, end = start-1, end+1
			}
			fixes = append(fixes, fix{start, end, codeSpan(string(l)) + " " + NoteLink})
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			segs := n.Segments
			var raw []byte
			for _, s := range segments(segs) {
				raw = append(raw, s.Value(src)...)
			}
			if allowedTag(raw) {
				return ast.WalkContinue, nil
			}
			for _, s := range segments(segs) {
				fixes = append(fixes, escapeLT(src, s)...)
			}
		case *ast.HTMLBlock:
			lines := segments(n.Lines())
			if n.HasClosure() {
				lines = append(lines, n.ClosureLine)
			}
			var raw []byte
			for _, s := range lines {
				raw = append(raw, s.Value(src)...)
			}
			if allowedHTML(raw) {
				return ast.WalkContinue, nil
			}
			for _, s := range lines {
				fixes = append(fixes, escapeLT(src, s)...)
			}
		case *ast.CodeSpan:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			fixes = append(fixes, bareURLs(src, n)...)
		case *ast.LinkReferenceDefinition:
			if localURL(n.Destination) {
				return ast.WalkContinue, nil
			}
			// Its use may be an image in another renderer (or in a later
			// chunk of a stream): escaping its "[" makes it plain text.
			for _, s := range segments(n.Lines()) {
				for i := s.Start; i < s.Stop; i++ {
					if src[i] == '[' && (i == 0 || src[i-1] != '\\') {
						fixes = append(fixes, fix{i, i + 1, `\[`})
						break
					}
				}
			}
		}
		return ast.WalkContinue, nil
	})
	return fixes
}

// bareURL finds what a linkifying renderer (VS Code's markdown-it with
// linkify) may turn into a link: an address with a scheme, one starting with
// www., or a domain name followed by a path, query or fragment.
var bareURL = lazyregexp.New(`(?i)(?:\b[a-z][a-z0-9+.\-]*://|\bmailto:|\bwww\.|\b[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)*\.[a-z]{2,}(?::[0-9]+)?[/?#])[^\s<>\x60]*`)

// bareURLs returns the fixes of the addresses in the run of contiguous text
// nodes that starts at n (nothing when n continues a run): each one that
// would not be an allowed link goes into a code span.
func bareURLs(src []byte, n *ast.Text) []fix {
	if prev, ok := n.PreviousSibling().(*ast.Text); ok && prev.Segment.Stop == n.Segment.Start {
		return nil
	}
	start, end := n.Segment.Start, n.Segment.Stop
	for next, ok := n.NextSibling().(*ast.Text); ok && next.Segment.Start == end; next, ok = next.NextSibling().(*ast.Text) {
		end = next.Segment.Stop
	}
	if start < 0 || end > len(src) || start >= end {
		return nil
	}
	var out []fix
	for _, m := range bareURL.FindAllIndex(src[start:end], -1) {
		u := src[start+m[0] : start+m[1]]
		if !bytes.Contains(u, []byte("://")) && !bytes.HasPrefix(bytes.ToLower(u), []byte("www.")) && !bytes.HasPrefix(bytes.ToLower(u), []byte("mailto:")) {
			// A bare domain: a link only in fuzzy linkifiers, and harmful
			// only with data in it.
			if !bytes.ContainsAny(u, "?#@") {
				continue
			}
		} else if linkAllowed(u) {
			continue
		}
		out = append(out, fix{start + m[0], start + m[1], codeSpan(string(u)) + " " + NoteLink})
	}
	return out
}

func segments(l *text.Segments) []text.Segment {
	out := make([]text.Segment, l.Len())
	for i := range out {
		out[i] = l.At(i)
	}
	return out
}

// span is the source range of a link or image: from its recorded start
// (which must hold lead, "!" for an image, "[" for a link) to its recorded
// end.
func span(src []byte, n ast.Node, ends map[ast.Node]int, lead byte) (int, int, bool) {
	start, end := n.Pos(), ends[n]
	if start < 0 || end <= start || end > len(src) || src[start] != lead {
		return 0, 0, false
	}
	return start, end, true
}

// blockFix fences the whole top-level block holding n: the fallback when
// inertLink is the fix that shows an image or link node n (which starts
// with open) as its label, sep, its URL in a code span and note; a node
// whose span cannot be found is shown as its whole block, as code.
func inertLink(src []byte, n ast.Node, ends map[ast.Node]int, open byte, dest []byte, note, sep string) fix {
	start, end, ok := span(src, n, ends, open)
	if !ok {
		return blockFix(src, n)
	}
	t := codeSpan(cleanURL(dest)) + " " + note
	if l := plain(src, n); l != "" {
		t = label(l) + sep + t
	}
	return fix{start, end, t}
}

// n's source range is not known.
func blockFix(src []byte, n ast.Node) fix {
	for n.Parent() != nil && n.Parent().Kind() != ast.KindDocument {
		n = n.Parent()
	}
	start, end := blockRange(src, n)
	return fix{start, end, Fenced(string(src[start:end]))}
}

// blockRange is the source of a top-level block: from the start of the line
// where it starts to the start of the next block (or the end).
func blockRange(src []byte, n ast.Node) (int, int) {
	start := max(n.Pos(), 0)
	start = bytes.LastIndexByte(src[:start], '\n') + 1
	end := len(src)
	if next := n.NextSibling(); next != nil && next.Pos() >= start {
		end = bytes.LastIndexByte(src[:next.Pos()], '\n') + 1
		if end < start {
			end = len(src)
		}
	}
	return start, end
}

func escapeLT(src []byte, s text.Segment) []fix {
	var out []fix
	for i := s.Start; i < s.Stop && i < len(src); i++ {
		if src[i] == '<' {
			out = append(out, fix{i, i + 1, "&lt;"})
		}
	}
	return out
}

// plain is the text of n's children: the label of a link, the alt text of
// an image.
func plain(src []byte, n ast.Node) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(src))
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// label is s as inert inline text: with every ASCII punctuation escaped,
// or in a code span when it could be read as an address.
func label(s string) string {
	if strings.ContainsAny(s, ":@.") || strings.Contains(strings.ToLower(s), "www") {
		return codeSpan(s)
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && isASCIIPunct(byte(r)) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// codeSpan is s in a code span that s cannot close.
func codeSpan(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if s == "" || s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' || s[len(s)-1] == ' ' {
		s = " " + s + " "
	}
	return fence + s + fence
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// cleanURL is a destination as a browser reads it: markdown escapes and
// HTML entities resolved, tabs and line breaks removed, surrounding spaces
// and control characters trimmed.
func cleanURL(dest []byte) string {
	s := string(util.UnescapePunctuations(dest))
	s = html.UnescapeString(s)
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// scheme returns the scheme of u (lower case) and the rest; "" for a
// relative reference. Backslashes count as slashes, as browsers read them
// in http(s) URLs.
func scheme(u string) (string, string) {
	u = strings.ReplaceAll(u, `\`, "/")
	i := strings.IndexAny(u, ":/?#")
	if i < 0 || u[i] != ':' {
		return "", u
	}
	return strings.ToLower(u[:i]), u[i+1:]
}

// localURL reports whether dest names something on this machine: a
// relative path (not a network-path reference such as //host/x), or a file:
// URL with no host or localhost.
func localURL(dest []byte) bool {
	u := cleanURL(dest)
	s, rest := scheme(u)
	switch s {
	case "":
		return !strings.HasPrefix(rest, "//")
	case "file":
		if !strings.HasPrefix(rest, "//") {
			return true
		}
		host, _, _ := strings.Cut(rest[2:], "/")
		return host == "" || strings.EqualFold(host, "localhost")
	}
	return false
}

// linkAllowed reports whether a link to dest may stay a link: a local
// destination, or an http, https or mailto URL that carries no user
// information, query or fragment.
func linkAllowed(dest []byte) bool {
	if localURL(dest) {
		return true
	}
	u := cleanURL(dest)
	if strings.ContainsAny(u, "?#") {
		return false
	}
	s, rest := scheme(u)
	switch s {
	case "mailto":
		return true
	case "http", "https":
		if strings.Contains(rest, "@") {
			// An @ anywhere but in mailto: renderers disagree on where
			// the host ends (user info, an address inside the path).
			return false
		}
		p, err := url.Parse(s + ":" + strings.ReplaceAll(rest, `\`, "/"))
		return err == nil && p.User == nil && p.Host != "" && !strings.Contains(p.Host, "@")
	}
	return false
}

// safeTag matches one attribute-less tag of the allowlist.
var safeTag = lazyregexp.New(`(?i)^</?(b|i|em|strong|code|kbd|sub|sup|br|p|details|summary|s|del|ins|mark|small|u|hr|ul|ol|li|blockquote|pre|table|thead|tbody|tr|th|td)\s*/?>$`)

func allowedTag(raw []byte) bool { return safeTag.Match(bytes.TrimSpace(raw)) }

// tagLike finds what a browser may read as a tag, comment or declaration.
var tagLike = lazyregexp.New(`<[^>]*>?`)

// allowedHTML reports whether every tag of an HTML block is in the
// allowlist.
func allowedHTML(raw []byte) bool {
	for _, t := range tagLike.FindAll(raw, -1) {
		if !allowedTag(t) {
			return false
		}
	}
	return true
}
