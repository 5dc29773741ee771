package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentls/agentls/workspace/ownfs"
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
	// Replaced by a rename in agentls's folder, no link followed.
	if err := ownfs.ReplaceFile(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("allowed commands: %w", err)
	}
	return nil
}
