package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent/session"
)

// TestReviewAsksWithTheDiffEvenUnderAuto: with the review setting, an
// edit asks permission with its diff although approval "auto" would allow
// it unasked; rejected, the file is unchanged and the model is told.
func TestReviewAsksWithTheDiffEvenUnderAuto(t *testing.T) {
	for _, tc := range []struct {
		answer string
		kept   bool
	}{{"reject_once", false}, {"allow_once", true}} {
		t.Run(tc.answer, func(t *testing.T) {
			c := &testClient{answer: tc.answer}
			conn, root, id := connectSettings(t, c, "test-key", sdk.ClientCapabilities{}, func(s *session.Settings) {
				s.Approval, s.Review = "auto", session.ReviewAlways
			})
			prompt(t, conn, id, "DISKEDIT: add a header")
			got, _ := os.ReadFile(filepath.Join(root, "main.go"))
			if kept := strings.HasPrefix(string(got), "// Header.\n"); kept != tc.kept {
				t.Fatalf("main.go after the review:\n%s", got)
			}
			_, perms := c.snapshot()
			if len(perms) != 1 {
				t.Fatalf("%d permission requests; want 1 (the review)", len(perms))
			}
			var diff *sdk.ToolCallContentDiff
			for _, cc := range perms[0].ToolCall.Content {
				if cc.Diff != nil {
					diff = cc.Diff
				}
			}
			if diff == nil || diff.OldText == nil || *diff.OldText != fixture || diff.NewText != "// Header.\n"+fixture {
				t.Fatalf("review question diff %+v; want the fixture to the header", diff)
			}
		})
	}
}
