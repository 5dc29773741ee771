package store

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// An image is data: the store keeps its bytes as given, while the text
// of the same message passes the redactor; a replayed append adds no
// image twice; the images survive a reopen and leave with their session.
func TestMessageImagesAreKeptAsData(t *testing.T) {
	ctx := context.Background()
	const secret = "sk-images-are-not-text-0123456789"
	path := filepath.Join(t.TempDir(), "agentls.db")
	s, err := Open(ctx, path, Options{Secrets: func() []string { return []string{secret} }})
	must(t, err)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), secret...) // the secret's bytes inside the picture
	gif := []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")
	must(t, s.CreateTask(Task{ID: "T1", SessionID: "S1", Prompt: "look"}))
	msg := Message{Seq: 1, Role: "user", Content: "look, my key is " + secret,
		Images: []Image{{MIMEType: "image/png", Data: png}, {MIMEType: "image/gif", Data: gif}}}
	must(t, s.AppendMessage("T1", msg))
	must(t, s.AppendMessage("T1", msg)) // a replay on resume
	must(t, s.AppendMessage("T1", Message{Seq: 2, Role: "assistant", Content: "a picture"}))
	must(t, s.CreateTask(Task{ID: "T2", SessionID: "S2", Prompt: "other"}))
	must(t, s.AppendMessage("T2", Message{Seq: 1, Role: "user", Content: "other", Images: []Image{{MIMEType: "image/png", Data: png}}}))
	closeTest(t, s)

	s = openTest(t, path)
	rec, err := s.LoadTask(ctx, "T1")
	must(t, err)
	if len(rec.Messages) != 2 {
		t.Fatalf("messages %+v; want 2", rec.Messages)
	}
	m := rec.Messages[0]
	if strings.Contains(m.Content, secret) {
		t.Errorf("the text kept the secret: %q", m.Content)
	}
	if len(m.Images) != 2 {
		t.Fatalf("images %+v; want the PNG and the GIF once each", m.Images)
	}
	for i, want := range []Image{{MIMEType: "image/png", Size: len(png), Data: png}, {MIMEType: "image/gif", Size: len(gif), Data: gif}} {
		got := m.Images[i]
		if got.MIMEType != want.MIMEType || got.Size != want.Size || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("image %d = %s, %d bytes, data %q; want %s, %d bytes, byte for byte", i, got.MIMEType, got.Size, got.Data, want.MIMEType, want.Size)
		}
	}
	if len(rec.Messages[1].Images) != 0 {
		t.Errorf("the answer has images: %+v", rec.Messages[1].Images)
	}

	must(t, s.DeleteSession("S1"))
	flushTest(t, s)
	for task, want := range map[string]int{"T1": 0, "T2": 1} {
		var n int
		must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM message_images WHERE task_id = ?`, task).Scan(&n))
		if n != want {
			t.Errorf("%d images of task %s left after deleting session S1; want %d", n, task, want)
		}
	}
}

// The images of one message are kept in order while their bytes stay
// within MaxImageBytes; the ones after keep their type and size only.
func TestMessageImagesPastTheCapKeepTheirTypeAndSize(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "agentls.db"))
	big := bytes.Repeat([]byte{0xAB}, MaxImageBytes-1024)
	cases := []struct {
		name   string
		images []Image
		kept   []bool
	}{
		{"within the cap", []Image{{MIMEType: "image/png", Data: big}, {MIMEType: "image/jpeg", Data: make([]byte, 1024)}}, []bool{true, true}},
		{"one byte over", []Image{{MIMEType: "image/png", Data: big}, {MIMEType: "image/jpeg", Data: make([]byte, 1025)}}, []bool{true, false}},
		{"over, then a small one", []Image{{MIMEType: "image/webp", Data: make([]byte, 10)}, {MIMEType: "image/png", Data: bytes.Repeat([]byte{1}, MaxImageBytes)}, {MIMEType: "image/gif", Data: make([]byte, 3)}}, []bool{true, false, false}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "T" + string(rune('a'+i))
			must(t, s.CreateTask(Task{ID: id, Prompt: c.name}))
			must(t, s.AppendMessage(id, Message{Seq: 1, Role: "user", Content: c.name, Images: c.images}))
			flushTest(t, s)
			rec, err := s.LoadTask(ctx, id)
			must(t, err)
			got := rec.Messages[0].Images
			if len(got) != len(c.images) {
				t.Fatalf("%d images stored; want %d", len(got), len(c.images))
			}
			for j, img := range got {
				want := c.images[j]
				if img.MIMEType != want.MIMEType || img.Size != len(want.Data) {
					t.Errorf("image %d: %s, %d bytes; want %s, %d bytes", j, img.MIMEType, img.Size, want.MIMEType, len(want.Data))
				}
				if kept := img.Data != nil; kept != c.kept[j] || kept && !bytes.Equal(img.Data, want.Data) {
					t.Errorf("image %d kept %v (%d bytes of data); want kept %v, byte for byte", j, kept, len(img.Data), c.kept[j])
				}
			}
		})
	}
}
