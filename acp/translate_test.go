package acp

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/langserver"
	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/workspace"
)

// TestKindOfEveryTool: every tool agentls offers (built-in and language
// tools) gets its ACP kind from its own presentation, and an unknown or
// empty kind is "other".
func TestKindOfEveryTool(t *testing.T) {
	ws, err := workspace.New(context.Background(), workspace.Options{Roots: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	reg := tools.New(tools.Env{Workspace: ws})
	defer reg.Close()
	all := append(reg.Tools(), langserver.Tools(langserver.Env{Workspace: ws})...)
	want := map[string]sdk.ToolKind{
		"read_file": sdk.ToolKindRead, "list_files": sdk.ToolKindRead, "grep": sdk.ToolKindSearch,
		"edit_file": sdk.ToolKindEdit, "write_file": sdk.ToolKindEdit, "run_command": sdk.ToolKindExecute,
		"update_plan": sdk.ToolKindThink,
		"definition":  sdk.ToolKindSearch, "references": sdk.ToolKindSearch, "hover": sdk.ToolKindSearch,
		"symbols": sdk.ToolKindSearch, "implementations": sdk.ToolKindSearch, "callers": sdk.ToolKindSearch,
		"rename_symbol": sdk.ToolKindEdit,
	}
	for _, tl := range all {
		w, ok := want[tl.Name()]
		if !ok {
			t.Errorf("tool %s has no expected kind in this test", tl.Name())
			continue
		}
		if got := kindOf(tools.Describe(tl, tl.Name(), json.RawMessage(`{}`), nil).Kind); got != w {
			t.Errorf("kind of %s = %q; want %q", tl.Name(), got, w)
		}
		delete(want, tl.Name())
	}
	if len(want) > 0 {
		t.Errorf("tools not offered: %v", want)
	}
	for _, k := range []tools.Kind{"", "something_new", tools.KindOther} {
		if got := kindOf(k); got != sdk.ToolKindOther {
			t.Errorf("kindOf(%q) = %q; want other", k, got)
		}
	}
}

// TestLocationsStayInTheRoot: a presentation's places become absolute
// paths with their line; one outside the root is left out.
func TestLocationsStayInTheRoot(t *testing.T) {
	got := locations("/ws", []tools.Location{{Path: "a.go", Line: 3}, {Path: "../etc/passwd"}, {Path: "sub/b.go"}})
	three := 3
	want := []sdk.ToolCallLocation{{Path: "/ws/a.go", Line: &three}, {Path: "/ws/sub/b.go"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("locations = %+v; want %+v", got, want)
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
