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
// (.agentls/settings.json). It is workspace-controlled (a repository can
// ship it), so nothing in it widens what the agent may do: its
// allowCommands, which earlier versions wrote, is ignored, and the user is
// told once.
const SettingsFileName = "settings.json"

// WorkspaceSettings is the content of .agentls/settings.json.
type WorkspaceSettings struct {
	// AllowCommands is read only to tell the user it is ignored.
	AllowCommands []string `json:"allowCommands"`
}

// approver is a task's approval policy: the approval setting ("auto"
// allows, "deny" denies, "ask" asks; a read of a file that commonly holds
// secrets asks under "auto" too, unless the user's allowSecretReads covers
// it), then the command prefixes the user allowed (the allowCommands
// setting and the "Always allow" answers kept in the user's configuration
// folder) for commands that are safe commands (tools/shellpolicy, extended
// by the safeCommands setting), then the user through the face's Port.
type approver struct {
	h        *Host
	port     Port
	root     string // the workspace's primary root: the key of remembered prefixes
	stateDir string
	settings Settings
	policy   *shellpolicy.Policy
	task     func() (id, prompt string)
	denied   func(what string) // told of each refusal (for the task's summary); may be nil
}

// Approve implements tools.Approver: decide, and note a refusal.
func (a *approver) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
	d, err := a.decide(ctx, req)
	if d == tools.Deny && a.denied != nil && ctx.Err() == nil {
		a.denied(req.Summary)
	}
	return d, err
}

func (a *approver) decide(ctx context.Context, req tools.ApprovalRequest) (tools.Decision, error) {
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
	cmd := shellpolicy.Parse(req.Command)
	if req.Command != "" {
		a.h.warnWorkspaceAllowCommands(a.stateDir)
		remembered, err := RememberedCommands(a.root)
		if err != nil {
			a.h.logger().Warn("remembered commands not read", "error", err)
		}
		if a.policy.Covers(cmd, slices.Concat(a.settings.AllowCommands, remembered)) {
			return tools.AllowOnce, nil
		}
	}
	id, prompt := a.task()
	q := Question{TaskID: id, Prompt: prompt, Request: req}
	if req.Command != "" {
		q.AlwaysPrefix = a.policy.Prefix(cmd)
	}
	d, err := a.port.Ask(ctx, q)
	if err != nil {
		return tools.Deny, err
	}
	if d == tools.AllowAlways {
		if q.AlwaysPrefix == "" {
			return tools.AllowOnce, nil
		}
		if err := RememberCommand(a.root, q.AlwaysPrefix); err != nil {
			a.h.logger().Warn("cannot remember the allowed command", "prefix", q.AlwaysPrefix, "error", err)
		}
	}
	return d, nil
}

// Policy is the safe-command allowlist of the settings: the built-in one
// and the user's safeCommands.
func (c Settings) Policy() (*shellpolicy.Policy, []error) {
	return shellpolicy.Default().With(c.SafeCommands)
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

// CommandPrefix is what "Always allow" remembers of a command under the
// built-in allowlist: the words of the safe-command entry it passes ("go
// test" for "go test ./...", "ls" for "ls -la"), or "" (nothing is
// offered) when the command is not one simple command or not a safe
// command ("python3 --version", "go test -exec x").
func CommandPrefix(command string) string { return tools.CommandPrefix(command) }

// CommandAllowed reports whether one of prefixes covers command under the
// built-in allowlist: it parses as one simple command of literal words
// (no list, pipe, substitution, redirection, control character...), is a
// safe command whose further words pass its entry's rule, and starts word
// by word with the prefix (tools/shellpolicy).
func CommandAllowed(command string, prefixes []string) bool {
	return shellpolicy.Covered(command, prefixes)
}

// warnWorkspaceAllowCommands tells the user, once per host, that the
// allowCommands of a workspace's .agentls/settings.json is ignored.
func (h *Host) warnWorkspaceAllowCommands(stateDir string) {
	ws, err := ReadWorkspaceSettings(stateDir)
	if err != nil || len(ws.AllowCommands) == 0 {
		return
	}
	h.mu.Lock()
	warned := h.warnedWorkspaceAllow
	h.warnedWorkspaceAllow = true
	h.mu.Unlock()
	if !warned {
		h.logger().Warn("ignoring allowCommands in the workspace's .agentls/settings.json: a repository can ship that file, so "+
			"commands allowed always are kept in the user's configuration folder (and the allowCommands setting) only",
			"file", filepath.Join(stateDir, SettingsFileName), "ignored", ws.AllowCommands)
	}
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

// AllowedCommandsFile is where "Always allow" answers are kept: a file in
// the user's configuration folder (os.UserConfigDir()/agentls), out of
// every workspace, holding for each workspace root the command prefixes
// the user allowed there.
func AllowedCommandsFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("allowed commands: %w", err)
	}
	return filepath.Join(dir, "agentls", "allowed-commands.json"), nil
}

// allowedCommands is the content of AllowedCommandsFile.
type allowedCommands struct {
	// Roots maps a workspace root (an absolute, clean path) to the command
	// prefixes allowed always there.
	Roots map[string][]string `json:"roots"`
}

func readAllowed(path string) (allowedCommands, error) {
	var a allowedCommands
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return a, fmt.Errorf("allowed commands: %w", err)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("allowed commands %s: %w", path, err)
	}
	return a, nil
}

// RememberedCommands are the prefixes the user allowed always in the
// workspace whose primary root is root.
func RememberedCommands(root string) ([]string, error) {
	path, err := AllowedCommandsFile()
	if err != nil {
		return nil, err
	}
	settingsMu.Lock()
	defer settingsMu.Unlock()
	a, err := readAllowed(path)
	return a.Roots[filepath.Clean(root)], err
}

// RememberCommand adds prefix to the prefixes allowed always in the
// workspace of root. The file is replaced atomically (a temporary file in
// the same folder, then a rename), readable by the user only.
func RememberCommand(root, prefix string) error {
	path, err := AllowedCommandsFile()
	if err != nil {
		return err
	}
	settingsMu.Lock()
	defer settingsMu.Unlock()
	a, err := readAllowed(path)
	if err != nil {
		return err
	}
	root = filepath.Clean(root)
	if slices.Contains(a.Roots[root], prefix) {
		return nil
	}
	if a.Roots == nil {
		a.Roots = map[string][]string{}
	}
	a.Roots[root] = append(a.Roots[root], prefix)
	out, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("allowed commands: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".allowed-commands-*.json")
	if err != nil {
		return fmt.Errorf("allowed commands: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("allowed commands: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("allowed commands: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("allowed commands: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("allowed commands: %w", err)
	}
	return nil
}
