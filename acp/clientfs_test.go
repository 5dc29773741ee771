package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// fsClient is an editor that offers fs/read_text_file and
// fs/write_text_file: it holds buffers (unsaved text included) and counts
// the reads it answers; files it holds no buffer of are read from disk, as
// an editor opens them.
type fsClient struct {
	testClient
	fmu     sync.Mutex
	buffers map[string]string
	reads   []string
	writes  []sdk.WriteTextFileRequest
}

func (c *fsClient) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	c.reads = append(c.reads, p.Path)
	if text, ok := c.buffers[p.Path]; ok {
		return sdk.ReadTextFileResponse{Content: text}, nil
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams(map[string]any{"path": p.Path})
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *fsClient) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	c.writes = append(c.writes, p)
	c.buffers[p.Path] = p.Content
	return sdk.WriteTextFileResponse{}, nil
}

func (c *fsClient) fsState() (reads []string, writes []sdk.WriteTextFileRequest) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	return append([]string(nil), c.reads...), append([]sdk.WriteTextFileRequest(nil), c.writes...)
}

var fsCaps = sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}

// TestFirstEditStartsFromTheClientsUnsavedText: the editor holds main.go
// with an unsaved line the disk does not have; the first edit of the
// session asks the client for the text, keeps the unsaved line, and writes
// through the client, leaving the disk alone. A later prompt asks the
// client for nothing it does not need.
func TestFirstEditStartsFromTheClientsUnsavedText(t *testing.T) {
	c := &fsClient{testClient: testClient{answer: "allow_once"}, buffers: map[string]string{}}
	conn, root, id := connectClient(t, c, "test-key", fsCaps)
	main := filepath.Join(root, "main.go")
	unsaved := "// unsaved line typed by the user\n" + fixture
	c.buffers[main] = unsaved

	prompt(t, conn, id, "UNSAVEDEDIT: call run")
	reads, writes := c.fsState()
	if len(writes) != 1 || writes[0].Path != main {
		t.Fatalf("writes %+v; want one fs/write_text_file of %s", writes, main)
	}
	want := strings.Replace(unsaved, "func main() {}", "func main() { run() }", 1)
	if writes[0].Content != want {
		t.Fatalf("the client was given\n%s\nwant (the unsaved line kept)\n%s", writes[0].Content, want)
	}
	if len(reads) == 0 || reads[0] != main {
		t.Fatalf("reads %q; want the edit to start with fs/read_text_file of %s", reads, main)
	}
	if disk, _ := os.ReadFile(main); string(disk) != fixture {
		t.Errorf("disk holds\n%s\nwant it untouched (the client owns the file)", disk)
	}
	_, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("%d permission requests; want 1 for the edit", len(perms))
	}

	prompt(t, conn, id, "JUSTANSWER: anything to do?")
	if again, _ := c.fsState(); len(again) != len(reads) {
		t.Errorf("a prompt that reads nothing asked the client for %q", again[len(reads):])
	}
}
