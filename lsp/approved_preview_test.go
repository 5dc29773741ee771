package lsp_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/lsp"
	"github.com/agentls/agentls/lsp/lsptest"
	"github.com/agentls/agentls/workspace"
)

// TestApprovedDiffIsTheWrittenChange: the approval question of a change
// to a file not open in the editor shows the diff the tool will apply,
// and after "Allow once" the file on disk is that change byte for byte:
// the question's diff equals the diff from the text before to the text
// written. Edits a→ab and b→c on "a b" are shown and written as "ab c".
func TestApprovedDiffIsTheWrittenChange(t *testing.T) {
	tests := []struct {
		name, call, before, want string
	}{
		{"edit_file with two edits", `{"path":"ab.txt","edits":[{"old_string":"a","new_string":"ab"},{"old_string":"b","new_string":"c"}]}`, "a b", "ab c"},
		{"edit_file replace_all", `{"path":"ab.txt","old_string":"x","new_string":"yx","replace_all":true}`, "x\nx\n", "yx\nyx\n"},
		{"write_file", `{"path":"ab.txt","content":"one\ntwo\n"}`, "one\n", "one\ntwo\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := strings.Fields(tc.name)[0]
			files := map[string]string{"ab.txt": tc.before}
			a := newAgentSession(t, []fakemodel.Turn{
				{ToolCalls: []fakemodel.ToolCall{call("c1", tool, tc.call)}},
				{Text: "Done.", FinishReason: "stop", Times: -1},
			}, files, lsptest.Config{ShowMessageRequest: answer(lsp.ActionAllowOnce)}, agentOpts{settings: map[string]any{"approval": "ask"}})
			r, err := a.run(t, map[string]any{"prompt": "change ab.txt", "mode": "edit"})
			if err != nil || r.Status != "completed" {
				t.Fatalf("%+v, %v", r, err)
			}
			written, err := os.ReadFile(a.path("ab.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if string(written) != tc.want {
				t.Errorf("written %q; want %q", written, tc.want)
			}
			var diff strings.Builder
			for _, h := range workspace.DiffHunks(tc.before, string(written)) {
				diff.WriteString(h.Diff(tc.before))
			}
			st := a.c.Snapshot()
			if len(st.MessageRequests) != 1 {
				t.Fatalf("%d questions; want 1: %+v", len(st.MessageRequests), st.MessageRequests)
			}
			shown := st.MessageRequests[0].Message
			// The message ends with the diff (its last newline clipped).
			if diff.Len() == 0 || !strings.HasSuffix(shown, "\n"+strings.TrimSuffix(diff.String(), "\n")) {
				t.Errorf("question:\n%s\nwant it to end with the diff of what was written:\n%s", shown, diff.String())
			}
		})
	}
}
