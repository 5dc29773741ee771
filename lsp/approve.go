package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/shellpolicy"
	"github.com/agentls/agentls/workspace"
)

// Titles of the approval question's answers.
const (
	ActionAllowOnce    = "Allow once"
	ActionAllowForTask = "Allow for this task"
	ActionAlwaysPrefix = "Always allow" // followed by " `PREFIX`"
	ActionDeny         = "Deny"
)

// SettingsFileName is the workspace settings file in the state folder
// (.agentls/settings.json). "Always allow `PREFIX`" adds PREFIX to its
// allowCommands list.
const SettingsFileName = "settings.json"

// WorkspaceSettings is the content of .agentls/settings.json.
type WorkspaceSettings struct {
	// AllowCommands are command prefixes that never ask, in addition to the
	// agentls.allowCommands setting.
	AllowCommands []string `json:"allowCommands"`
}

// Approver is a tools.Approver that asks the user with
// window/showMessageRequest: "Allow once", "Allow for this task", "Always
// allow `PREFIX`" (commands only; remembered in .agentls/settings.json) and
// "Deny". agentls.approval "auto" allows and "deny" denies without asking;
// commands covered by a prefix of agentls.allowCommands or of the settings
// file never ask (tools/shellpolicy: one simple command under the prefix's
// words, no interpreter or wrapper). No answer within ServiceOptions.ApprovalTimeout, or a
// client error, denies; when the client has never answered one and lets
// one go unanswered, later questions of the session are denied at once
// (and the user is told once how to allow them).
type Approver struct {
	svc *Service
	ws  *workspace.Workspace
}

var _ tools.Approver = (*Approver)(nil)

// settingsMu serialises reads and writes of settings files.
var settingsMu sync.Mutex

// Approve implements tools.Approver.
func (a *Approver) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	srv := a.svc.srv
	cfg := srv.Config()
	switch cfg.Approval {
	case "auto":
		return tools.AllowOnce, nil
	case "deny":
		return tools.Deny, nil
	}
	if req.Command != "" {
		settings, _ := ReadWorkspaceSettings(a.ws.StateDir())
		if CommandAllowed(req.Command, append(append([]string(nil), cfg.AllowCommands...), settings.AllowCommands...)) {
			return tools.AllowOnce, nil
		}
	}
	prefix := ""
	actions := []protocol.MessageActionItem{{Title: ActionAllowOnce}, {Title: ActionAllowForTask}}
	if req.Command != "" {
		if prefix = CommandPrefix(req.Command); prefix != "" {
			actions = append(actions, protocol.MessageActionItem{Title: ActionAlwaysPrefix + " `" + prefix + "`"})
		}
	}
	actions = append(actions, protocol.MessageActionItem{Title: ActionDeny})
	who := "agentls"
	if e := entryOf(ctx); e != nil {
		who = fmt.Sprintf("agentls (task %s, %q)", e.label(), cutLine(e.spec.Prompt, 60))
	}
	msg := fmt.Sprintf("%s wants to %s.", who, req.Summary)
	if req.Path != "" && req.Command == "" {
		msg += " The file is not open in the editor, so the change goes straight to disk."
	}
	if a.svc.clientMute.Load() {
		// Some clients (ALE) never answer server-to-client requests: do not
		// stall every later call of every task for the full timeout.
		return tools.Deny, errors.New(`the editor did not answer an earlier approval question, so this is denied without asking (the user can set agentls.approval to "auto" or list commands in agentls.allowCommands)`)
	}
	actx, cancel := context.WithTimeout(ctx, a.svc.opts.ApprovalTimeout)
	defer cancel()
	item, err := srv.client.ShowMessageRequest(actx, &protocol.ShowMessageRequestParams{
		Type: protocol.MessageTypeWarning, Message: msg, Actions: actions,
	})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Deny, ctx.Err()
		}
		why := err.Error()
		if errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil {
			why = fmt.Sprintf("no answer within %s", a.svc.opts.ApprovalTimeout)
			if !a.svc.clientAnswered.Load() && a.svc.clientMute.CompareAndSwap(false, true) {
				srv.ShowMessage(ctx, protocol.MessageTypeWarning, fmt.Sprintf(
					"agentls: the editor did not answer an approval question within %s, so actions that need approval are denied for the rest of this session. "+
						`Set agentls.approval to "auto", or list commands in agentls.allowCommands, to allow them.`, a.svc.opts.ApprovalTimeout))
			}
		}
		srv.Logger().Warn("approval question not answered: denied", "request", req.Summary, "error", why)
		return tools.Deny, fmt.Errorf("the editor could not ask the user (%s), so it is denied", why)
	}
	a.svc.clientAnswered.Store(true)
	if item == nil {
		return tools.Deny, nil
	}
	switch {
	case item.Title == ActionAllowOnce:
		return tools.AllowOnce, nil
	case item.Title == ActionAllowForTask:
		return tools.AllowForTask, nil
	case prefix != "" && strings.HasPrefix(item.Title, ActionAlwaysPrefix):
		if err := AddAllowedCommand(a.ws.StateDir(), prefix); err != nil {
			srv.Logger().Warn("cannot remember the allowed command", "prefix", prefix, "error", err)
		}
		return tools.AllowAlways, nil
	}
	return tools.Deny, nil
}

// CommandPrefix is what "Always allow" remembers of a command: the safe
// word prefix tools/shellpolicy finds ("go test" for "go test ./...", "ls"
// for "ls -la"), or "" (nothing is offered) when the command is not one
// simple command or runs arbitrary code ("python3 --version").
func CommandPrefix(command string) string { return tools.CommandPrefix(command) }

// CommandAllowed reports whether one of prefixes covers command: it parses
// as one simple command of literal words (no list, pipe, substitution,
// redirection, control character...) that starts word by word with the
// prefix and runs no interpreter or wrapper (tools/shellpolicy).
func CommandAllowed(command string, prefixes []string) bool {
	return shellpolicy.Covered(command, prefixes)
}

// ReadWorkspaceSettings reads <stateDir>/settings.json; a missing file is
// empty settings.
func ReadWorkspaceSettings(stateDir string) (WorkspaceSettings, error) {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	return readSettings(stateDir)
}

func readSettings(stateDir string) (WorkspaceSettings, error) {
	var s WorkspaceSettings
	b, err := os.ReadFile(filepath.Join(stateDir, SettingsFileName))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("workspace settings: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("workspace settings %s: %w", filepath.Join(stateDir, SettingsFileName), err)
	}
	return s, nil
}

// AddAllowedCommand adds prefix to the allowCommands of
// <stateDir>/settings.json (keeping any other field of the file).
func AddAllowedCommand(stateDir, prefix string) error {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	path := filepath.Join(stateDir, SettingsFileName)
	raw := map[string]json.RawMessage{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &raw); err != nil {
			return fmt.Errorf("workspace settings %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("workspace settings: %w", err)
	}
	var list []string
	if v, ok := raw["allowCommands"]; ok {
		_ = json.Unmarshal(v, &list)
	}
	if slices.Contains(list, prefix) {
		return nil
	}
	list = append(list, prefix)
	enc, err := json.Marshal(list)
	if err != nil {
		return err
	}
	raw["allowCommands"] = enc
	out, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("workspace settings: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("workspace settings: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("workspace settings: %w", err)
	}
	return nil
}
