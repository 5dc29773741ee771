package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/shellpolicy"
	"github.com/bmatcuk/doublestar/v4"
)

// SettingsFileName is the workspace settings file in the state folder
// (.agentls/settings.json). "Always allow `PREFIX`" adds PREFIX to its
// allowCommands list. Only the user's answers write it: no tool may.
const SettingsFileName = "settings.json"

// WorkspaceSettings is the content of .agentls/settings.json.
type WorkspaceSettings struct {
	// AllowCommands are command prefixes that never ask, in addition to the
	// allowCommands setting.
	AllowCommands []string `json:"allowCommands"`
}

// approver is a task's approval policy: the approval setting ("auto"
// allows, "deny" denies, "ask" asks; a read of a file that commonly holds
// secrets asks under "auto" too, unless allowSecretReads covers it), the allowed command prefixes of the
// settings and of .agentls/settings.json, then the user through the face's
// Port. An "Always allow" answer is remembered in the settings file.
type approver struct {
	h        *Host
	port     Port
	stateDir string
	settings Settings
	task     func() (id, prompt string)
}

// Approve implements tools.Approver.
func (a *approver) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	switch {
	case a.settings.Approval == "deny":
		return tools.Deny, nil
	case req.Secret && SecretReadAllowed(req.Path, a.settings.AllowSecretReads):
		return tools.AllowOnce, nil
	case req.Secret:
		// A file that commonly holds secrets is read only with the user's
		// consent, even under "auto": the user decides, not the workspace.
	case a.settings.Approval == "auto":
		return tools.AllowOnce, nil
	}
	if req.Command != "" {
		ws, err := ReadWorkspaceSettings(a.stateDir)
		if err != nil {
			a.h.logger().Warn("workspace settings not read", "error", err)
		}
		if CommandAllowed(req.Command, slices.Concat(a.settings.AllowCommands, ws.AllowCommands)) {
			return tools.AllowOnce, nil
		}
	}
	id, prompt := a.task()
	q := Question{TaskID: id, Prompt: prompt, Request: req}
	if req.Command != "" {
		q.AlwaysPrefix = CommandPrefix(req.Command)
	}
	d, err := a.port.Ask(ctx, q)
	if err != nil {
		return tools.Deny, err
	}
	if d == tools.AllowAlways {
		if q.AlwaysPrefix == "" {
			return tools.AllowOnce, nil
		}
		if err := AddAllowedCommand(a.stateDir, q.AlwaysPrefix); err != nil {
			a.h.logger().Warn("cannot remember the allowed command", "prefix", q.AlwaysPrefix, "error", err)
		}
	}
	return d, nil
}

// SecretReadAllowed reports whether one of the user's allowSecretReads
// globs (doublestar, workspace-relative: ".env.test", "config/*.pem")
// matches path, a secret file the agent wants to read.
func SecretReadAllowed(path string, globs []string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, path); ok {
			return true
		}
	}
	return false
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

// settingsMu serialises reads and writes of settings files.
var settingsMu sync.Mutex

// ReadWorkspaceSettings reads <stateDir>/settings.json; a missing file is
// empty settings.
func ReadWorkspaceSettings(stateDir string) (WorkspaceSettings, error) {
	settingsMu.Lock()
	defer settingsMu.Unlock()
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
