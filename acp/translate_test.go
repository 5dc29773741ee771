package acp

import (
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/tools"
)

func TestToolKindOfEveryTool(t *testing.T) {
	for tool, want := range map[string]sdk.ToolKind{
		"read_file": sdk.ToolKindRead, "list_files": sdk.ToolKindRead, "grep": sdk.ToolKindSearch,
		"edit_file": sdk.ToolKindEdit, "write_file": sdk.ToolKindEdit, "run_command": sdk.ToolKindExecute,
		"update_plan": sdk.ToolKindThink, "something_new": sdk.ToolKindOther,
		"references": sdk.ToolKindSearch, "callers": sdk.ToolKindSearch, "rename_symbol": sdk.ToolKindEdit,
	} {
		if got := toolKind(tool); got != want {
			t.Errorf("toolKind(%q) = %q; want %q", tool, got, want)
		}
	}
}

func TestParseArgsReadsCutSummaries(t *testing.T) {
	for _, tc := range []struct {
		summary string
		want    callArgs
		raw     bool
	}{
		{`{"path":"main.go","line":3}`, callArgs{Path: "main.go", Line: 3}, true},
		{`{"command":"go test ./..."}`, callArgs{Command: "go test ./..."}, true},
		{`{"path":"a \"b\".go","old_string":"package main\nfunc verylongtext…`, callArgs{Path: `a "b".go`}, false},
		{`{"old_string":"x","path":"sub/x.go","new_string":"…`, callArgs{Path: "sub/x.go"}, false},
		{`not json`, callArgs{}, false},
	} {
		got, raw := parseArgs(tc.summary)
		if !reflect.DeepEqual(got, tc.want) || (raw != nil) != tc.raw {
			t.Errorf("parseArgs(%q) = %+v, raw %v; want %+v, raw %v", tc.summary, got, raw != nil, tc.want, tc.raw)
		}
	}
}

func TestAbsPathStaysInTheRoot(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want string
		ok   bool
	}{
		{"main.go", "/ws/main.go", true},
		{"sub/x.go", "/ws/sub/x.go", true},
		{".", "/ws", true},
		{"/ws/a.go", "/ws/a.go", true},
		{"../etc/passwd", "", false},
		{"/etc/passwd", "/etc/passwd", false},
		{"", "", false},
	} {
		got, ok := absPath("/ws", tc.p)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("absPath(%q) = %q, %v; want %q, %v", tc.p, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPlanEntriesMapStatuses(t *testing.T) {
	got := planEntries(tools.Plan{Items: []tools.PlanItem{
		{Text: "a", Status: tools.PlanPending}, {Text: "b", Status: tools.PlanInProgress},
		{Text: "c", Status: tools.PlanDone}, {Text: "d", Status: tools.PlanSkipped, Reason: "not needed"},
	}})
	want := []sdk.PlanEntry{
		{Content: "a", Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusPending},
		{Content: "b", Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusInProgress},
		{Content: "c", Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusCompleted},
		{Content: "d (skipped: not needed)", Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusCompleted},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planEntries:\n got %+v\nwant %+v", got, want)
	}
}

func TestStopReasonOfResults(t *testing.T) {
	for _, tc := range []struct {
		res  *agent.Result
		want sdk.StopReason
	}{
		{&agent.Result{Status: agent.StateCompleted, StopReason: agent.StopAnswered}, sdk.StopReasonEndTurn},
		{&agent.Result{Status: agent.StateCancelled, StopReason: agent.StopCancelled}, sdk.StopReasonCancelled},
		{&agent.Result{Status: agent.StateFailed, StopReason: agent.StopTurnBudget}, sdk.StopReasonMaxTurnRequests},
		{&agent.Result{Status: agent.StateFailed, StopReason: agent.StopTokenBudget}, sdk.StopReasonMaxTokens},
		{&agent.Result{Status: agent.StateFailed, StopReason: agent.StopModelError}, sdk.StopReasonEndTurn},
		{nil, sdk.StopReasonEndTurn},
	} {
		if got := stopReason(tc.res); got != tc.want {
			t.Errorf("stopReason(%+v) = %q; want %q", tc.res, got, tc.want)
		}
	}
}

func TestReadPromptJoinsTextLinksAndEmbeddedText(t *testing.T) {
	text := sdk.TextResourceContents{Uri: "file:///ws/sub/a.go", Text: "package sub\n"}
	in, err := readPrompt([]sdk.ContentBlock{
		sdk.TextBlock("Explain this"),
		sdk.ResourceLinkBlock("main.go", "file:///ws/main.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &text}),
		sdk.ResourceLinkBlock("docs", "https://example.com/docs"),
	}, "/ws")
	if err != nil {
		t.Fatal(err)
	}
	want := "Explain this\n\nFiles attached in the editor:\n- main.go\n- sub/a.go:\n```\npackage sub\n```\n- https://example.com/docs"
	if in.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", in.Text, want)
	}
	if in.Context.File != "main.go" {
		t.Errorf("context file %q; want main.go (the first file named)", in.Context.File)
	}
	if !reflect.DeepEqual(in.Files, []string{"/ws/main.go", "/ws/sub/a.go"}) {
		t.Errorf("files %q", in.Files)
	}
	if in.Embedded["/ws/sub/a.go"] != "package sub\n" {
		t.Errorf("embedded %q", in.Embedded)
	}
}

func TestReadPromptRefusesWhatIsNotOffered(t *testing.T) {
	blob := sdk.BlobResourceContents{Uri: "file:///ws/x.bin", Blob: "AAAA"}
	for name, b := range map[string]sdk.ContentBlock{
		"svg image":     sdk.ImageBlock("AAAA", "image/svg+xml"),
		"image not b64": sdk.ImageBlock("not base64!", "image/png"),
		"audio":         sdk.AudioBlock("AAAA", "audio/wav"),
		"blob":          sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &blob}),
	} {
		if _, err := readPrompt([]sdk.ContentBlock{sdk.TextBlock("x"), b}, "/ws"); err == nil {
			t.Errorf("a prompt with %s was accepted", name)
		}
	}
}
