package acp_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// modelCallID is the shape of the scripted model's tool call ids.
var modelCallID = regexp.MustCompile(`^call_\d+_\d+$`)

// callContent gathers, per tool call, every text and diff the client was
// sent, and the title it was first given.
func callContent(ups []sdk.SessionUpdate) (titles map[string]string, texts map[string]string, diffs map[string][]*sdk.ToolCallContentDiff) {
	titles, texts, diffs = map[string]string{}, map[string]string{}, map[string][]*sdk.ToolCallContentDiff{}
	add := func(id string, cc []sdk.ToolCallContent) {
		for _, c := range cc {
			if c.Content != nil && c.Content.Content.Text != nil {
				texts[id] += c.Content.Content.Text.Text
			}
			if c.Diff != nil {
				diffs[id] = append(diffs[id], c.Diff)
			}
		}
	}
	for _, u := range ups {
		if u.ToolCall != nil {
			titles[string(u.ToolCall.ToolCallId)] = u.ToolCall.Title
			add(string(u.ToolCall.ToolCallId), u.ToolCall.Content)
		}
		if u.ToolCallUpdate != nil {
			add(string(u.ToolCallUpdate.ToolCallId), u.ToolCallUpdate.Content)
		}
	}
	return
}

// TestPermissionCarriesTheDiffAndKeepsTheTitle: the permission request of
// an edit names the tool call by the model's call id, leaves its title
// alone, and carries the whole file before and after (the client's
// unsaved text as the before).
func TestPermissionCarriesTheDiffAndKeepsTheTitle(t *testing.T) {
	c := &fsClient{testClient: testClient{answer: "allow_once"}, buffers: map[string]string{}}
	conn, root, id := connectClient(t, c, "test-key", fsCaps)
	main := filepath.Join(root, "main.go")
	unsaved := "// unsaved\n" + fixture
	c.buffers[main] = unsaved
	prompt(t, conn, id, "UNSAVEDEDIT: call run")
	ups, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("%d permission requests; want 1", len(perms))
	}
	tc := perms[0].ToolCall
	if !modelCallID.MatchString(string(tc.ToolCallId)) {
		t.Errorf("toolCallId %q; want the model's call id", tc.ToolCallId)
	}
	titles, _, _ := callContent(ups)
	if _, ok := titles[string(tc.ToolCallId)]; !ok {
		t.Errorf("the permission names call %q, which was never announced (%v)", tc.ToolCallId, titles)
	}
	if tc.Title != nil {
		t.Errorf("the permission renames the call to %q", *tc.Title)
	}
	if len(tc.Content) != 1 || tc.Content[0].Diff == nil {
		t.Fatalf("permission content %+v; want one diff", tc.Content)
	}
	d := tc.Content[0].Diff
	want := strings.Replace(unsaved, "func main() {}", "func main() { run() }", 1)
	if d.Path != main || d.OldText == nil || *d.OldText != unsaved || d.NewText != want {
		t.Errorf("diff %s\nold %v\nnew %q\nwant old %q new %q", d.Path, d.OldText, d.NewText, unsaved, want)
	}
}

// TestCommandShowsItsWholeOutputAndFullCommand: the permission request
// shows the command in full, the finished call the whole output.
func TestCommandShowsItsWholeOutputAndFullCommand(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, _, id := connect(t, c)
	prompt(t, conn, id, "CMDOUT: print three lines")
	ups, perms := c.snapshot()
	if len(perms) != 1 || len(perms[0].ToolCall.Content) != 1 || perms[0].ToolCall.Content[0].Content == nil ||
		!strings.Contains(perms[0].ToolCall.Content[0].Content.Content.Text.Text, `printf 'line one\nline two\nline three\n'`) {
		t.Fatalf("permission %+v; want the whole command as its content", perms)
	}
	titles, texts, _ := callContent(ups)
	callID := string(perms[0].ToolCall.ToolCallId)
	if !strings.HasPrefix(titles[callID], "Run `printf") {
		t.Errorf("title %q", titles[callID])
	}
	for _, line := range []string{"line one", "line two", "line three"} {
		if !strings.Contains(texts[callID], line) {
			t.Errorf("the call shows %q; want every line of the output (%q missing)", texts[callID], line)
		}
	}
}

// TestValidatorVerdictIsNoThoughtAndTurnsAreParagraphs: the check's
// "PASS" never reaches the client, and the text of two model turns is two
// paragraphs, not one run-on line.
func TestValidatorVerdictIsNoThoughtAndTurnsAreParagraphs(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, _, id := connect(t, c)
	prompt(t, conn, id, "TWOTURNS: look")
	if got := c.text(); !strings.Contains(got, "I will look first.\n\nDone looking.") {
		t.Errorf("message text %q; want the two turns as two paragraphs", got)
	}
	ups, _ := c.snapshot()
	for _, u := range ups {
		if u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil && strings.Contains(u.AgentThoughtChunk.Content.Text.Text, "PASS") {
			t.Errorf("the validator's verdict is shown as a thought: %q", u.AgentThoughtChunk.Content.Text.Text)
		}
	}
	// A read shows where it read.
	found := false
	for _, u := range ups {
		if u.ToolCallUpdate != nil && len(u.ToolCallUpdate.Locations) > 0 && strings.HasSuffix(u.ToolCallUpdate.Locations[0].Path, "main.go") {
			found = true
		}
	}
	if !found {
		t.Error("the read_file call ends without its location")
	}
}

// TestCancelledPermissionEndsTheTurnCancelled: a permission answered
// "cancelled" without session/cancel ends the turn as cancelled; the
// command does not run and the model is not called again.
func TestCancelledPermissionEndsTheTurnCancelled(t *testing.T) {
	c := &testClient{answer: "cancelled"}
	conn, root, id := connect(t, c)
	if r := prompt(t, conn, id, "CANCELPERM: make a marker"); r.StopReason != sdk.StopReasonCancelled {
		t.Errorf("stop reason %q; want cancelled", r.StopReason)
	}
	if strings.Contains(c.text(), "MODEL CALLED AGAIN") {
		t.Error("the model was called again after the cancelled permission")
	}
	if _, err := os.Stat(filepath.Join(root, "cancel-marker")); err == nil {
		t.Error("the command ran")
	}
}

// TestApprovedDiffIsTheWrittenText: the permission request of an edit_file
// call with several edits carries the text the tool will write, computed
// from its own plan (every edit matched against the file as read), and
// the file on disk after "allow once" is byte for byte that text. Edits
// a→ab and b→c on "a b" are shown and written as "ab c" (done one after
// the other they would read "ac b").
func TestApprovedDiffIsTheWrittenText(t *testing.T) {
	c := &testClient{answer: "allow_once"}
	conn, root, id := connect(t, c)
	path := filepath.Join(root, "ab.txt")
	if err := os.WriteFile(path, []byte("a b"), 0o644); err != nil {
		t.Fatal(err)
	}
	prompt(t, conn, id, "MULTIEDIT: edit twice")
	_, perms := c.snapshot()
	if len(perms) != 1 {
		t.Fatalf("%d permission requests; want 1", len(perms))
	}
	var shown *sdk.ToolCallContentDiff
	for _, cc := range perms[0].ToolCall.Content {
		if cc.Diff != nil {
			shown = cc.Diff
		}
	}
	if shown == nil || shown.Path != path || shown.OldText == nil || *shown.OldText != "a b" {
		t.Fatalf("permission content %+v; want the diff of %s from \"a b\"", perms[0].ToolCall.Content, path)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if shown.NewText != string(written) || string(written) != "ab c" {
		t.Errorf("shown %q, written %q; want both \"ab c\"", shown.NewText, written)
	}
}
