package acp_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/acp"
	"github.com/agentls/agentls/lsp/lsptest"
)

// TestLoadReplaysThePromptsImage: a prompt's image is kept with the
// session; after a restart (a second agent on the same store),
// session/load replays the prompt's text, then its image block with the
// same data, then the answer. The image is data everywhere it is kept:
// the log names it by type and size, and neither the log, the
// workspace's files (the flight recording) nor the store holds its base64.
func TestLoadReplaysThePromptsImage(t *testing.T) {
	root := workspaceRoot(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	var log lsptest.SyncBuffer
	withLog := func(o *acp.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c := v1Agent(t, db, root, nil, withLog)
	c.initialize(`{}`)
	id := c.newSession(root)
	img := map[string]any{"type": "image", "mimeType": "image/png", "data": png1x1}
	if r := c.prompt(id, textBlock("IMAGE: what is in this picture?"), img); r.Error != nil {
		t.Fatalf("image prompt: %+v", r.Error)
	}
	if got := c.agentText(id); !strings.Contains(got, "I see a PNG image.") {
		t.Fatalf("answer %q: the image did not reach the model", got)
	}

	c2 := v1Agent(t, db, root, nil, withLog)
	c2.initialize(`{}`)
	c2.ok("session/load", map[string]any{"sessionId": id, "cwd": root, "mcpServers": []any{}}, nil)
	var order []string
	for _, u := range c2.updates(id) {
		switch u["sessionUpdate"] {
		case "user_message_chunk":
			switch get(u, "content", "type") {
			case "text":
				if strings.Contains(fmt.Sprint(get(u, "content", "text")), "IMAGE: what is in this picture?") {
					order = append(order, "prompt")
				}
			case "image":
				if get(u, "content", "mimeType") == "image/png" && get(u, "content", "data") == png1x1 {
					order = append(order, "image")
				} else {
					order = append(order, fmt.Sprintf("another image (%v, %d bytes of data)", get(u, "content", "mimeType"), len(fmt.Sprint(get(u, "content", "data")))))
				}
			}
		case "agent_message_chunk":
			if strings.Contains(fmt.Sprint(get(u, "content", "text")), "I see a PNG image.") {
				order = append(order, "answer")
			}
		}
	}
	if strings.Join(order, ",") != "prompt,image,answer" {
		t.Errorf("replayed %v; want prompt, image, answer", order)
	}

	raw, err := base64.StdEncoding.DecodeString(png1x1)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("image/png, %d bytes", len(raw)); !strings.Contains(log.String(), want) {
		t.Errorf("the log does not name the image by type and size (%q):\n%s", want, log.String())
	}
	if strings.Contains(log.String(), png1x1[:24]) {
		t.Errorf("the log holds the image's base64 data")
	}
	recorded := false
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(png1x1[:24])) {
			t.Errorf("%s holds the image's base64 data", p)
		}
		if strings.HasSuffix(p, ".jsonl") && bytes.Contains(b, []byte(fmt.Sprintf("[image: image/png, %d bytes, not recorded]", len(raw)))) {
			recorded = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !recorded {
		t.Errorf("no flight recording under %s names the image by type and size", root)
	}
	stored := false
	for _, name := range []string{"a.db", "a.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(png1x1[:24])) {
			t.Errorf("%s holds the image as base64 text; the store keeps its bytes", name)
		}
		stored = stored || bytes.Contains(b, raw)
	}
	if !stored {
		t.Errorf("the store holds no copy of the image's bytes")
	}
}
