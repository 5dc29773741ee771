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
