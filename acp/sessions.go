package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentls/agentls/agent"
	"github.com/agentls/agentls/agent/render"
	"github.com/agentls/agentls/agent/session"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/workspace/ownfs"
)

// SessionsFileName, in the workspace's state folder (.agentls/), maps ACP
// session IDs to the session store's: an ACP session exists before its
// first task, while the store names a session after its first task.
const SessionsFileName = "acp-sessions.json"

// sessionsFile is the content of SessionsFileName.
type sessionsFile struct {
	// Sessions maps an ACP session ID to the store's ("" until the
	// session's first task: it exists from session/new).
	Sessions map[string]string `json:"sessions"`
	// State is what a session/load or session/resume restores.
	State map[string]savedSession `json:"state,omitempty"`
}

// savedSession is the state of an ACP session that outlives the process.
type savedSession struct {
	Mode    string `json:"mode,omitempty"`
	Model   string `json:"model,omitempty"`
	Effort  string `json:"effort,omitempty"`
	Title   string `json:"title,omitempty"`
	Updated string `json:"updated,omitempty"` // RFC 3339
	// The boolean config options (config.go).
	Review    bool `json:"review,omitempty"`
	NoNetwork bool `json:"noNetwork,omitempty"`
	// Extra are the additional roots the session was last given.
	Extra []string `json:"extra,omitempty"`
}

var sessionsMu sync.Mutex // serialises reads and writes of sessions files

// stateFolder opens agentls's state folder of a workspace (no link
// followed; a refused folder is an error).
type stateFolder interface {
	OpenState() (*ownfs.Dir, error)
}

func readSessions(ws stateFolder) (sessionsFile, error) {
	f := sessionsFile{Sessions: map[string]string{}, State: map[string]savedSession{}}
	d, err := ws.OpenState()
	if err != nil {
		return f, fmt.Errorf("acp sessions: %w", err)
	}
	defer d.Close()
	stateDir := d.Path()
	b, err := d.ReadFile(SessionsFileName)
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
	if f.State == nil {
		f.State = map[string]savedSession{}
	}
	return f, nil
}

// save records session s: its store ID (once it has one) and the state a
// load restores.
func (a *Agent) save(ctx context.Context, s *acpSession) {
	ws, err := s.host.Workspace(ctx)
	if err != nil {
		return
	}
	s.mu.Lock()
	storeID := s.storeID
	st := savedSession{Mode: s.mode, Model: s.model, Effort: s.effort, Title: s.title, Updated: time.Now().UTC().Format(time.RFC3339),
		Review: s.review, NoNetwork: s.noNetwork, Extra: s.extra}
	s.mu.Unlock()
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	f, err := readSessions(ws)
	if err != nil {
		a.log.Warn("acp sessions not read", "error", err)
		return
	}
	if storeID != "" || f.Sessions[s.id] == "" {
		f.Sessions[s.id] = storeID
	}
	f.State[s.id] = st
	if err := writeSessions(ws, f); err != nil {
		a.log.Warn("acp session not remembered", "session", s.id, "error", err)
	}
}

// forgetIfEmpty drops a closed session that never ran a task from the
// sessions file: nothing of it is worth listing.
func (a *Agent) forgetIfEmpty(ctx context.Context, s *acpSession) {
	s.mu.Lock()
	empty := s.storeID == "" && s.lastTask == ""
	s.mu.Unlock()
	if !empty {
		return
	}
	ws, err := s.host.Workspace(ctx)
	if err != nil {
		return
	}
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	f, err := readSessions(ws)
	if err != nil || f.Sessions[s.id] != "" {
		return
	}
	delete(f.Sessions, s.id)
	delete(f.State, s.id)
	if err := writeSessions(ws, f); err != nil {
		a.log.Warn("acp sessions not written", "error", err)
	}
}

// writeSessions replaces the sessions file atomically; sessionsMu is held.
// A link at the file or at its former temporary name
// (acp-sessions.json.tmp) refuses the folder (workspace.StateNames); the
// replacement is a rename inside the folder's handle, never a write
// through a link.
func writeSessions(ws stateFolder, f sessionsFile) error {
	b, _ := json.MarshalIndent(f, "", "  ")
	d, err := ws.OpenState()
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(SessionsFileName, append(b, '\n'), 0o644)
}

// remember records that ACP session s is store session storeID.
func (a *Agent) remember(ctx context.Context, s *acpSession, storeID string) {
	s.mu.Lock()
	same := s.storeID == storeID
	s.storeID = storeID
	s.mu.Unlock()
	if !same {
		a.save(ctx, s)
	}
}

// savedSessions is the sessions file of a workspace, and its ACP sessions
// by store ID (those that have one).
func (a *Agent) savedSessions(ctx context.Context, h *session.Host) (f sessionsFile, storeToACP map[string]string) {
	f = sessionsFile{Sessions: map[string]string{}, State: map[string]savedSession{}}
	storeToACP = map[string]string{}
	ws, err := h.Workspace(ctx)
	if err != nil {
		return
	}
	sessionsMu.Lock()
	got, err := readSessions(ws)
	sessionsMu.Unlock()
	if err != nil {
		a.log.Warn("acp sessions not read", "error", err)
		return
	}
	for k, v := range got.Sessions {
		if v != "" {
			storeToACP[v] = k
		}
	}
	return got, storeToACP
}

// ListSessions implements sdk.Agent: the sessions of the session store of
// cwd (default: the process's working directory), most recent first, the
// ones started from the LSP side or the command line included, and the ACP
// sessions that have no task yet. An ACP session keeps the ID the client
// was given.
func (a *Agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	if err := a.checkInitialized(ctx); err != nil {
		return sdk.ListSessionsResponse{}, err
	}
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
	offset := 0
	if p.Cursor != nil && *p.Cursor != "" {
		if offset, err = parseCursor(*p.Cursor); err != nil {
			return sdk.ListSessionsResponse{}, err
		}
	}
	sessions, err := h.Sessions(ctx, offset+listPage+1)
	if err != nil {
		return sdk.ListSessionsResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	saved, toACP := a.savedSessions(ctx, h)
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, ss := range sessions {
		id := ss.ID
		if acpID, ok := toACP[ss.ID]; ok {
			id = acpID
		}
		info := sdk.SessionInfo{SessionId: sdk.SessionId(id), Cwd: root, AdditionalDirectories: saved.State[id].Extra}
		title := ss.Title
		if t := saved.State[id].Title; t != "" {
			title = t
		}
		if title != "" {
			info.Title = &title
		}
		if !ss.UpdatedAt.IsZero() {
			at := ss.UpdatedAt.UTC().Format(time.RFC3339)
			info.UpdatedAt = &at
		}
		out.Sessions = append(out.Sessions, info)
	}
	// Sessions created and not yet prompted, newest first.
	var fresh []sdk.SessionInfo
	for id, storeID := range saved.Sessions {
		if storeID != "" {
			continue
		}
		st := saved.State[id]
		info := sdk.SessionInfo{SessionId: sdk.SessionId(id), Cwd: root, AdditionalDirectories: st.Extra}
		if st.Title != "" {
			title := st.Title
			info.Title = &title
		}
		if st.Updated != "" {
			at := st.Updated
			info.UpdatedAt = &at
		}
		fresh = append(fresh, info)
	}
	// Newest first; the ID breaks ties (times are in seconds), so that
	// the pages of session/list cut one order.
	slices.SortFunc(fresh, func(x, y sdk.SessionInfo) int {
		if c := strings.Compare(deref(y.UpdatedAt), deref(x.UpdatedAt)); c != 0 {
			return c
		}
		return strings.Compare(string(x.SessionId), string(y.SessionId))
	})
	all := append(fresh, out.Sessions...)
	out.Sessions = []sdk.SessionInfo{}
	if offset < len(all) {
		out.Sessions = all[offset:min(len(all), offset+listPage)]
	}
	if offset+listPage < len(all) {
		next := makeCursor(offset + listPage)
		out.NextCursor = &next
	}
	return out, nil
}

// listPage is how many sessions one session/list reply carries; a
// nextCursor leads to the rest.
const listPage = 50

// makeCursor is the opaque cursor of the page that starts at offset.
func makeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "agentls-list:%d", offset))
}

// parseCursor reads a cursor made by makeCursor.
func parseCursor(c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	var n int
	if err == nil {
		_, err = fmt.Sscanf(string(b), "agentls-list:%d", &n)
	}
	if err != nil || n < 0 || n > 1_000_000 {
		return 0, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("invalid cursor %q: pass the nextCursor of a previous session/list reply", c)})
	}
	return n, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// LoadSession implements sdk.AgentLoader: the session's tasks are replayed
// from the store as session/update (each prompt, its plan, its tool calls,
// its edits as diffs, its answer) before the reply; the next prompt follows up the last
// task that ended, with the earlier prompts and answers in the model's
// context. A session that has had no task yet loads empty. Its mode,
// model and title are restored and announced.
func (a *Agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	servers, notes := mcpServers(p.McpServers)
	s, err := a.open(ctx, string(p.SessionId), p.Cwd, p.AdditionalDirectories, true, servers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	a.log.Info("acp session loaded", "session", s.id, "store", s.storeID, "followUp", s.lastTask)
	a.announce(s, true)
	return sdk.LoadSessionResponse{Modes: modeState(s.mode), ConfigOptions: a.configOptions(ctx, s), Meta: mcpNote(servers, notes)}, nil
}

// ResumeSession implements sdk.Agent: session/load without the replay of
// the history (the client keeps its own).
func (a *Agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	servers, notes := mcpServers(p.McpServers)
	s, err := a.open(ctx, string(p.SessionId), p.Cwd, p.AdditionalDirectories, false, servers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	a.log.Info("acp session resumed", "session", s.id, "store", s.storeID, "followUp", s.lastTask)
	a.announce(s, true)
	return sdk.ResumeSessionResponse{Modes: modeState(s.mode), ConfigOptions: a.configOptions(ctx, s), Meta: mcpNote(servers, notes)}, nil
}

// open makes stored session id of cwd the connection's, replaying its
// tasks when replay is set; servers are the MCP servers the client gave.
func (a *Agent) open(ctx context.Context, id, cwd string, dirs []string, replay bool, servers []mcp.ServerConfig) (*acpSession, error) {
	if err := a.checkInitialized(ctx); err != nil {
		return nil, err
	}
	root, err := rootOf(cwd)
	if err != nil {
		return nil, err
	}
	extra, err := extraRoots(root, dirs)
	if err != nil {
		return nil, err
	}
	h, bufs, err := a.host(root, extra...)
	if err != nil {
		return nil, err
	}
	saved, _ := a.savedSessions(ctx, h)
	storeID, known := saved.Sessions[id]
	if !known {
		storeID = id // a session of another face: its store ID
	}
	var tasks []session.ReplayTask
	if storeID != "" {
		if tasks, err = h.Replay(ctx, storeID); err != nil {
			return nil, sdk.NewInternalError(map[string]any{"error": err.Error()})
		}
	}
	if len(tasks) == 0 && !known {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no stored session %q in %s", id, root)})
	}
	st := saved.State[id]
	s := &acpSession{id: id, root: root, extra: extra, host: h, bufs: bufs, mode: ModeEdit,
		storeID: storeID, model: st.Model, effort: st.Effort, title: st.Title, mcp: servers, review: st.Review, noNetwork: st.NoNetwork}
	// The client's MCP servers start now, in the background: a first start
	// (npx downloading) is not paid by the first turn.
	go h.StartMCP(context.WithoutCancel(ctx), servers)
	switch st.Mode {
	case ModeAsk, ModeEdit, ModePlan:
		s.mode = st.Mode
	}
	a.mu.Lock()
	if old, ok := a.sessions[id]; ok {
		old.mu.Lock()
		running := old.running != nil
		old.mu.Unlock()
		if running {
			a.mu.Unlock()
			return nil, sdk.NewInvalidParams(map[string]any{"error": "the session is running a turn"})
		}
	}
	a.mu.Unlock()
	for _, t := range tasks {
		if replay {
			a.replay(s, t)
		}
		if t.Ended {
			s.lastTask, s.lastPrompt = t.ID, t.Prompt
		}
	}
	a.mu.Lock()
	a.sessions[id] = s
	a.mu.Unlock()
	return s, nil
}

// announce tells the client what the session is now: its commands, its
// mode, its config options and its title. A session the client already
// knows (load, resume) is told before the reply; a new one just after it
// (a client drops updates of a session it does not know yet).
func (a *Agent) announce(s *acpSession, known bool) {
	send := func() {
		s.mu.Lock()
		mode, title := s.mode, s.title
		s.mu.Unlock()
		a.update(s.id, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: a.commandsFor(context.Background(), s.id)}})
		a.update(s.id, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(mode)}})
		if title != "" {
			a.update(s.id, sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: &title}})
		}
	}
	if known {
		send()
		return
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		send()
	}()
}

// setTitle names a session after its first prompt and tells the client.
func (a *Agent) setTitle(ctx context.Context, s *acpSession, prompt string) {
	s.mu.Lock()
	if s.title != "" {
		s.mu.Unlock()
		return
	}
	s.title = session.FirstLine(prompt, 80)
	title := s.title
	s.mu.Unlock()
	a.save(ctx, s)
	at := time.Now().UTC().Format(time.RFC3339)
	a.update(s.id, sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: &title, UpdatedAt: &at}})
}

// replay sends one stored task as the updates a client shows for history.
func (a *Agent) replay(s *acpSession, t session.ReplayTask) {
	a.update(s.id, sdk.UpdateUserMessageText(t.Prompt))
	// The prompt's images follow its text, as the model got them.
	for _, img := range t.Images {
		if img.Data == "" {
			a.update(s.id, sdk.UpdateUserMessageText(img.Note))
			continue
		}
		a.update(s.id, sdk.UpdateUserMessage(sdk.ImageBlock(img.Data, img.MIMEType)))
	}
	if t.Plan != nil && len(t.Plan.Items) > 0 {
		a.update(s.id, sdk.SessionUpdate{Plan: &sdk.SessionUpdatePlan{Entries: planEntries(*t.Plan)}})
	}
	for i, tc := range t.ToolCalls {
		title, kind, locs, shownApart := storedCall(s.root, tc.Name, tc.Args)
		if shownApart {
			continue // the plan and the diffs below show these
		}
		status := sdk.ToolCallStatusCompleted
		if tc.IsError {
			status = sdk.ToolCallStatusFailed
		}
		call := &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(fmt.Sprintf("%s-replay-call-%d", t.ID, i+1)),
			Title: title, Kind: kind, Status: status, Locations: locs}
		if raw := rawArgs(tc.Args); raw != nil {
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

// DeleteSession answers session/delete: the session leaves session/list
// and the session store (its tasks, their conversations, tool calls and
// edits), and a turn it is running is cancelled. The session is looked
// for in the workspaces this connection has opened (a client lists, with
// a cwd, before it deletes) and in the process's working directory.
func (a *Agent) DeleteSession(ctx context.Context, id string) error {
	if err := a.checkInitialized(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	s := a.sessions[id]
	var hosts []*session.Host
	if s != nil {
		hosts = append(hosts, s.host)
	} else {
		for _, h := range a.hosts {
			hosts = append(hosts, h)
		}
	}
	a.mu.Unlock()
	if s == nil {
		if wd, err := os.Getwd(); err == nil {
			if root, err := rootOf(wd); err == nil {
				if h, _, err := a.host(root); err == nil && !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
				}
			}
		}
	}
	for _, h := range hosts {
		storeID, found := a.storedAs(ctx, h, id)
		if !found {
			continue
		}
		if s != nil {
			_ = a.Cancel(ctx, sdk.CancelNotification{SessionId: sdk.SessionId(id)})
			s.mu.Lock()
			t := s.running
			s.mu.Unlock()
			if t != nil {
				select {
				case <-t.Done():
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		a.mu.Lock()
		delete(a.sessions, id)
		a.mu.Unlock()
		if err := a.unsave(ctx, h, id); err != nil {
			return sdk.NewInternalError(map[string]any{"error": err.Error()})
		}
		if storeID != "" {
			if err := h.DeleteSession(ctx, storeID); err != nil {
				return sdk.NewInternalError(map[string]any{"error": err.Error()})
			}
		}
		a.log.Info("acp session deleted", "session", id, "store", storeID)
		return nil
	}
	return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q: list the sessions of its cwd with session/list first", id)})
}

// storedAs finds session id in the workspace of h: its store ID ("" for an
// ACP session that ran no task), and whether it is there at all.
func (a *Agent) storedAs(ctx context.Context, h *session.Host, id string) (string, bool) {
	saved, _ := a.savedSessions(ctx, h)
	if storeID, ok := saved.Sessions[id]; ok {
		return storeID, true
	}
	// A session of another face is listed by its store ID.
	if tasks, err := h.Replay(ctx, id); err == nil && len(tasks) > 0 {
		return id, true
	}
	return "", false
}

// unsave drops session id from the sessions file of h's workspace.
func (a *Agent) unsave(ctx context.Context, h *session.Host, id string) error {
	ws, err := h.Workspace(ctx)
	if err != nil {
		return err
	}
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	f, err := readSessions(ws)
	if err != nil {
		return err
	}
	if _, ok := f.Sessions[id]; !ok {
		return nil
	}
	delete(f.Sessions, id)
	delete(f.State, id)
	return writeSessions(ws, f)
}
