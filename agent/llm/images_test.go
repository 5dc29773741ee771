package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/llm/fakemodel"
)

// A 1x1 PNG.
const pngData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// TestImagesAreImageURLPartsWithDataURLs: a user message's images reach the
// service as image_url parts holding data: URLs, after the message's text,
// and the fake model can match on them.
func TestImagesAreImageURLPartsWithDataURLs(t *testing.T) {
	c, srv := start(t, []fakemodel.Turn{
		{Match: &fakemodel.Match{Image: "data:image/png;base64,"}, Text: "I see a PNG"},
		{Text: "no image seen", Times: -1},
	}, nil)
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "what is this?", Images: []llm.Image{{MIMEType: "image/png", Data: pngData}}}}}
	r, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "I see a PNG" {
		t.Errorf("answer %q: the image did not reach the model", r.Message.Content)
	}
	got := srv.Requests()[0].Chat.Messages[0]
	if got.Content != "" || len(got.MultiContent) != 2 {
		t.Fatalf("user message sent as %+v; want a text part and an image part", got)
	}
	if got.MultiContent[0].Text != "what is this?" || got.MultiContent[1].ImageURL == nil ||
		got.MultiContent[1].ImageURL.URL != "data:image/png;base64,"+pngData {
		t.Errorf("parts %+v", got.MultiContent)
	}
	// A message without images stays a plain string.
	if _, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "plain"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if m := srv.Requests()[1].Chat.Messages[0]; m.Content != "plain" || len(m.MultiContent) != 0 {
		t.Errorf("a text message was sent as %+v", m)
	}
}

// TestRefusedImageSaysSo: a 400 to a request with an image says the model
// may not take images; the same 400 without an image keeps the general hint.
func TestRefusedImageSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		images []llm.Image
		kind   llm.ErrorKind
		hint   string
	}{
		{"with an image", []llm.Image{{MIMEType: "image/png", Data: pngData}}, llm.KindImages, "may not take images"},
		{"without", nil, llm.KindInvalid, "refused the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := start(t, []fakemodel.Turn{{Status: 400, Body: `{"error":{"message":"image input is not supported for this model","type":"invalid_request_error"}}`, Times: -1}}, nil)
			_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x", Images: tc.images}}}, nil)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("error %v (kind %v); want kind %s saying %q", err, e, tc.kind, tc.hint)
			}
		})
	}
}
