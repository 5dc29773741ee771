package journal

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
)

// A 1x1 PNG.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// An interrupted task whose prompt carried an image is resumed with the
// image in its history, as the model first got it: the message goes to a
// real store through the Writer and comes back through Resume.
func TestResumedHistoryKeepsThePromptImages(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	w := NewWriter(st)
	prompt := llm.Message{Role: llm.RoleUser, Content: "what is in this picture?",
		Images: []llm.Image{{MIMEType: "image/png", Data: png1x1}, {MIMEType: "image/gif", Data: "R0lGODlhAQABAAAAACw="}}}
	for _, r := range []Record{
		TaskCreated{SessionID: "s-1", Kind: "ask", Prompt: "what is in this picture?", State: "queued"},
		MessageAdded{Seq: 0, Message: llm.Message{Role: llm.RoleSystem, Content: "sys"}},
		MessageAdded{Seq: 1, Message: prompt},
		TaskState{State: "executing"},
		Commit{},
	} {
		if err := w.Record(ctx, "t-1", r); err != nil {
			t.Fatalf("Record(%T): %v", r, err)
		}
	}
	r, err := Resume(ctx, st, "t-1", nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.History) != 2 || !reflect.DeepEqual(r.History[1].Message, prompt) {
		t.Fatalf("resumed history %+v; want the prompt with both images, unchanged", r.History)
	}
}

// An image the store did not keep (past its cap) is named in the text of
// the message the model gets back, by type and size; it is not sent.
func TestImageNotKeptIsNamedInTheHistory(t *testing.T) {
	m := historyMessage(store.Message{Role: "user", Content: "look", Images: []store.Image{
		{MIMEType: "image/png", Size: 9 << 20},
		{MIMEType: "image/gif", Size: 3, Data: []byte("GIF")},
	}})
	if len(m.Images) != 1 || m.Images[0] != (llm.Image{MIMEType: "image/gif", Data: "R0lG"}) {
		t.Errorf("images %+v; want only the kept GIF", m.Images)
	}
	if !strings.HasPrefix(m.Content, "look\n") || !strings.Contains(m.Content, "image/png, 9437184 bytes") {
		t.Errorf("content %q; want the text, then the image not kept by type and size", m.Content)
	}
}
