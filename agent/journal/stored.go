// Package journal is a task's record in the session store, both ways: the
// records the loop writes as a task runs (Record, kept by Writer in the
// store's form), and what the host reads back of them: the interrupted
// task a resumed run continues from (Resume), the ended task a follow-up
// of an earlier run continues (Earlier), the lessons of failed tasks
// (Lessons), and undo, which reverts a task's edits from its record
// (Undo). The loop (package agent) imports the journal for its
// vocabulary; the journal knows nothing of the loop or the host.
package journal

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
	"github.com/agentls/agentls/tools"
)

// The session store is a leaf package with types of its own; these functions
// convert between them and the model client's and the tools' types. The
// store's Usage and CallRequest have the same fields as llm.Usage and
// llm.ToolCall, so a plain conversion suffices and the compiler tells when
// they drift apart.

// storedMessage is m as the store keeps it, without the store's own fields
// (Seq, model call, usage, exclusion), which the caller sets.
func storedMessage(m llm.Message) store.Message {
	sm := store.Message{
		Role: string(m.Role), Content: m.Content, Reasoning: m.Reasoning,
		ToolCallID: m.ToolCallID, Name: m.Name,
	}
	if len(m.ToolCalls) > 0 {
		sm.ToolCalls = make([]store.CallRequest, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			sm.ToolCalls[i] = store.CallRequest(c)
		}
	}
	for _, img := range m.Images {
		sm.Images = append(sm.Images, storedImage(img))
	}
	return sm
}

// storedImage is img as the store keeps it: its bytes, decoded from the
// base64 the model client sends. Data that is not base64 (the ACP face
// refuses it before a task starts) is kept without its data, by size.
func storedImage(img llm.Image) store.Image {
	b, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		return store.Image{MIMEType: img.MIMEType, Size: base64.StdEncoding.DecodedLen(len(img.Data))}
	}
	return store.Image{MIMEType: img.MIMEType, Size: len(b), Data: b}
}

// ImageData is a stored image's data as base64, the form the model client
// and ACP send; "" when the store did not keep it.
func ImageData(img store.Image) string {
	if img.Data == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(img.Data)
}

// ImageNote is what stands for an image the store did not keep (it passed
// the store's cap of image bytes per message).
func ImageNote(img store.Image) string {
	return fmt.Sprintf("[an image (%s, %d bytes) was attached here; it is not kept: over the store's %d MiB of images per message]",
		img.MIMEType, img.Size, store.MaxImageBytes>>20)
}

// historyMessage is the message of the history a stored message holds,
// reasoning included.
func historyMessage(m store.Message) llm.Message {
	hm := llm.Message{
		Role: llm.Role(m.Role), Content: m.Content, Reasoning: m.Reasoning,
		ToolCallID: m.ToolCallID, Name: m.Name,
	}
	if len(m.ToolCalls) > 0 {
		hm.ToolCalls = make([]llm.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			hm.ToolCalls[i] = llm.ToolCall(c)
		}
	}
	// The images go back into the message, as the model saw them; one the
	// store did not keep is named in the text instead.
	for _, img := range m.Images {
		if data := ImageData(img); data != "" {
			hm.Images = append(hm.Images, llm.Image{MIMEType: img.MIMEType, Data: data})
			continue
		}
		hm.Content += "\n" + ImageNote(img)
	}
	return hm
}

// StoredHistory returns the messages of a stored task the model sees: those
// not excluded, in order.
func StoredHistory(rec *store.TaskRecord) []llm.Message {
	ctx := rec.Context()
	out := make([]llm.Message, len(ctx))
	for i, m := range ctx {
		out[i] = historyMessage(m)
	}
	return out
}

// planUpdate is p as the store keeps it: its JSON and its open items.
func planUpdate(p tools.Plan) (store.PlanUpdate, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return store.PlanUpdate{}, fmt.Errorf("plan: %w", err)
	}
	return store.PlanUpdate{Plan: b, Open: p.Open()}, nil
}

// StoredPlan decodes the last plan of a stored task; nil when it has none.
func StoredPlan(rec *store.TaskRecord) (*tools.Plan, error) {
	if rec.Plan == nil {
		return nil, nil
	}
	var p tools.Plan
	if err := json.Unmarshal(rec.Plan, &p); err != nil {
		return nil, fmt.Errorf("plan %d of task %s: %w", rec.PlanSeq, rec.ID, err)
	}
	return &p, nil
}

// toolCallRecord is the store's record of a finished tool call; the store
// keeps the head and the tail of a long result text.
func toolCallRecord(callID string, r tools.Result) store.ToolCall {
	return store.ToolCall{
		CallID: callID, Name: r.Tool, Args: r.Args, Duration: r.Duration,
		IsError: r.IsError, Summary: r.Text,
	}
}

// decisionName is the stored name of an approval decision.
func decisionName(d tools.Decision) string {
	switch d {
	case tools.Deny, tools.DenyAlways:
		return store.DecisionDeny
	case tools.AllowOnce:
		return store.DecisionAllowOnce
	case tools.AllowForTask:
		return store.DecisionAllowTask
	case tools.AllowAlways:
		return store.DecisionAllowAlways
	}
	return fmt.Sprintf("decision_%d", int(d))
}
