package recorder

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
)

// TestRecordHidesSecretsAndBoundsALine: a line never holds a configured
// secret or a key of a known shape, and a request larger than a quarter of
// the file cap is recorded by its size.
func TestRecordHidesSecretsAndBoundsALine(t *testing.T) {
	token := "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	r, err := Open(t.TempDir(), "task-1", Options{MaxFileBytes: 64 << 10, Secrets: []string{"configured-secret-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	small, _ := json.Marshal(map[string]string{"content": "configured-secret-1 and " + token})
	big, _ := json.Marshal(map[string]string{"content": strings.Repeat("x", 32<<10)})
	for _, req := range [][]byte{small, big} {
		if err := r.Record(llm.Exchange{Model: "m", Request: req}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines; want 2", len(lines))
	}
	if strings.Contains(lines[0], "configured-secret-1") || strings.Contains(lines[0], token) || !strings.Contains(lines[0], "[redacted]") {
		t.Errorf("line 1 = %s; want the secrets hidden", lines[0])
	}
	var x llm.Exchange
	if err := json.Unmarshal([]byte(lines[1]), &x); err != nil {
		t.Fatal(err)
	}
	if len(lines[1]) > 16<<10 || !strings.Contains(string(x.Request), "agentls_not_recorded_bytes") {
		t.Errorf("line 2 has %d bytes, request %.80s; want the request recorded by its size", len(lines[1]), x.Request)
	}
}

// TestRecordWritesImagesByTypeAndSize: an image sent inline in a request
// (a data: URL, its base64 split by newlines or not) is recorded as its
// type and size; the rest of the request stays as it was, valid JSON.
func TestRecordWritesImagesByTypeAndSize(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	cases := map[string]struct {
		url, want string
	}{
		"png":              {"data:image/png;base64," + png, "[image: image/png, 70 bytes, not recorded]"},
		"split by newline": {"data:image/jpeg;base64," + png[:40] + "\n" + png[40:], "[image: image/jpeg, 70 bytes, not recorded]"},
		"no padding":       {"data:image/webp;base64,AAAA", "[image: image/webp, 3 bytes, not recorded]"},
		"not an image":     {"data:text/plain;base64,aGVsbG8=", "data:text/plain;base64,aGVsbG8="},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := Open(t.TempDir(), "task-1", Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			req, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "what is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]string{"url": c.url}},
			}}}})
			if err := r.Record(llm.Exchange{Model: "m", Request: req}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(r.Path())
			if err != nil {
				t.Fatal(err)
			}
			var x llm.Exchange
			if err := json.Unmarshal(b, &x); err != nil {
				t.Fatalf("the line is not JSON: %v\n%s", err, b)
			}
			var body struct {
				Messages []struct {
					Content []struct {
						Text     string            `json:"text"`
						ImageURL map[string]string `json:"image_url"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(x.Request, &body); err != nil {
				t.Fatalf("the recorded request is not JSON: %v\n%s", err, x.Request)
			}
			parts := body.Messages[0].Content
			if parts[0].Text != "what is this?" || parts[1].ImageURL["url"] != c.want {
				t.Errorf("recorded %+v; want the text, then the URL %q", parts, c.want)
			}
			if strings.Contains(string(b), png[:24]) {
				t.Errorf("the recording holds the image's data")
			}
		})
	}
}
