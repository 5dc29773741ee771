package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/agent/session"
)

// SessionsFileName, in the workspace's state folder (.agentls/), maps ACP
// session IDs to the session store's: an ACP session exists before its
// first task, while the store names a session after its first task.
const SessionsFileName = "acp-sessions.json"

// sessionsFile is the content of SessionsFileName.
type sessionsFile struct {
	Sessions map[string]string `json:"sessions"` // ACP session ID -> store session ID
}

var sessionsMu sync.Mutex // serialises reads and writes of sessions files

func readSessions(stateDir string) (sessionsFile, error) {
	f := sessionsFile{Sessions: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(stateDir, SessionsFileName))
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("acp sessions: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("acp sessions %s: %w", filepath.Join(stateDir, SessionsFileName), err)
	}
	if f.Sessions == nil {
		f.Sessions = map[string]string{}
	}
	return f, nil
}

// remember records that ACP session s is store session storeID.
func (a *Agent) remember(ctx context.Context, s *acpSession, storeID string) {
	ws, err := s.host.Workspace(ctx)
	if err != nil {
		return
	}
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	f, err := readSessions(ws.StateDir())
	if err != nil {
		a.log.Warn("acp sessions not read", "error", err)
		return
	}
	if f.Sessions[s.id] == storeID {
		return
	}
	f.Sessions[s.id] = storeID
	b, _ := json.MarshalIndent(f, "", "  ")
	path := filepath.Join(ws.StateDir(), SessionsFileName)
	tmp := path + ".tmp"
	if err := os.MkdirAll(ws.StateDir(), 0o755); err == nil {
		if err = os.WriteFile(tmp, append(b, '\n'), 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			a.log.Warn("acp session not remembered", "session", s.id, "error", err)
		}
	}
}

// storeIDs maps the ACP session IDs of a workspace both ways.
func (a *Agent) storeIDs(ctx context.Context, h *session.Host) (acpToStore, storeToACP map[string]string) {
	acpToStore, storeToACP = map[string]string{}, map[string]string{}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return
	}
	sessionsMu.Lock()
	f, err := readSessions(ws.StateDir())
	sessionsMu.Unlock()
	if err != nil {
		a.log.Warn("acp sessions not read", "error", err)
	}
	for k, v := range f.Sessions {
		acpToStore[k] = v
		storeToACP[v] = k
	}
	return
}

// ListSessions implements sdk.Agent: the sessions of the session store of
// cwd (default: the process's working directory), most recent first, the
// ones started from the LSP side or the command line included. An ACP
// session keeps the ID the client was given.
func (a *Agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	cwd := ""
	if p.Cwd != nil {
		cwd = *p.Cwd
	} else if wd, err := os.Getwd(); err == nil {
		cwd = wd
	}
	root, err := rootOf(cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	h, _, err := a.host(root)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	sessions, err := h.Sessions(ctx, 50)
	if err != nil {
		return sdk.ListSessionsResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	_, toACP := a.storeIDs(ctx, h)
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, ss := range sessions {
		id := ss.ID
		if acpID, ok := toACP[ss.ID]; ok {
			id = acpID
		}
		info := sdk.SessionInfo{SessionId: sdk.SessionId(id), Cwd: root}
		if title := ss.Title; title != "" {
			info.Title = &title
		}
		if !ss.UpdatedAt.IsZero() {
			at := ss.UpdatedAt.UTC().Format(time.RFC3339)
			info.UpdatedAt = &at
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

// LoadSession implements sdk.AgentLoader: the session's tasks are replayed
// from the store as session/update (each prompt, its plan, its tool calls,
// its edits as diffs, its answer) before the reply; the next prompt follows up the last
// task that ended, with the earlier prompts and answers in the model's
// context.
func (a *Agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	root, err := rootOf(p.Cwd)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	h, bufs, err := a.host(root)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	id := string(p.SessionId)
	storeID := id
	if sid, ok := func() (string, bool) { m, _ := a.storeIDs(ctx, h); v, ok := m[id]; return v, ok }(); ok {
		storeID = sid
	}
	tasks, err := h.Replay(ctx, storeID)
	if err != nil {
		return sdk.LoadSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	if len(tasks) == 0 {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no stored session %q in %s", id, root)})
	}
	s := &acpSession{id: id, root: root, host: h, bufs: bufs, mode: ModeEdit}
	for _, t := range tasks {
		a.replay(s, t)
		if t.Ended {
			s.lastTask = t.ID
		}
	}
	a.mu.Lock()
	if old, ok := a.sessions[id]; ok && old.running != nil {
		a.mu.Unlock()
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "the session is running a turn"})
	}
	a.sessions[id] = s
	a.mu.Unlock()
	a.log.Info("acp session loaded", "session", id, "store", storeID, "tasks", len(tasks), "followUp", s.lastTask)
	a.announceCommands(id)
	return sdk.LoadSessionResponse{Modes: modeState(ModeEdit), Meta: mcpNote(len(p.McpServers))}, nil
}

// replay sends one stored task as the updates a client shows for history.
func (a *Agent) replay(s *acpSession, t session.ReplayTask) {
	a.update(s.id, sdk.UpdateUserMessageText(t.Prompt))
	if t.Plan != nil && len(t.Plan.Items) > 0 {
		a.update(s.id, sdk.SessionUpdate{Plan: &sdk.SessionUpdatePlan{Entries: planEntries(*t.Plan)}})
	}
	for i, tc := range t.ToolCalls {
		if tc.Name == "update_plan" || toolKind(tc.Name) == sdk.ToolKindEdit {
			continue // the plan and the diffs below show these
		}
		args, raw := parseArgs(string(tc.Args))
		status := sdk.ToolCallStatusCompleted
		if tc.IsError {
			status = sdk.ToolCallStatusFailed
		}
		call := &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(fmt.Sprintf("%s-replay-call-%d", t.ID, i+1)),
			Title: toolTitle(tc.Name, args), Kind: toolKind(tc.Name), Status: status}
		if abs, ok := absPath(s.root, args.Path); ok {
			call.Locations = []sdk.ToolCallLocation{{Path: abs}}
		}
		if raw != nil {
			call.RawInput = raw
		}
		if line := session.FirstLine(tc.Summary, 200); line != "" {
			call.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(line))}
		}
		a.update(s.id, sdk.SessionUpdate{ToolCall: call})
	}
	for i, fc := range t.Files {
		abs, ok := absPath(s.root, fc.Path)
		if !ok {
			continue
		}
		c := change{abs: abs, old: fc.Before, new: fc.After, create: fc.Created}
		a.update(s.id, sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
			ToolCallId: sdk.ToolCallId(fmt.Sprintf("%s-replay-%d", t.ID, i+1)), Title: "Edit " + fc.Path,
			Kind: sdk.ToolKindEdit, Status: sdk.ToolCallStatusCompleted,
			Locations: []sdk.ToolCallLocation{{Path: abs}}, Content: []sdk.ToolCallContent{diffContent(c)}}})
	}
	answer := render.Inert(t.Answer) // stored before answers were made inert, perhaps
	if answer == "" && !t.Ended {
		answer = "(interrupted: this task did not finish)"
	} else if answer == "" && t.State != string(agent.StateCompleted) {
		answer = fmt.Sprintf("(%s)", t.State)
	}
	if answer != "" {
		a.update(s.id, sdk.UpdateAgentMessageText(answer))
	}
}
