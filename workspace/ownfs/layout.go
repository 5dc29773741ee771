package ownfs

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// Where agentls keeps what it writes outside the workspace. These folders
// are agentls's alone: the command sandbox never makes a folder holding
// them writable (sandbox.Plan drops such a folder), so no confined command,
// language server or MCP server can plant a file or a link there.
//
//   - StateHome: the log and user-level state agentls writes itself,
//     $XDG_STATE_HOME/agentls, else ~/.local/state/agentls.
//   - ConfigHome: the user's settings, credentials and approvals,
//     os.UserConfigDir()/agentls ($XDG_CONFIG_HOME/agentls or
//     ~/.config/agentls on Linux).
//   - TempFallback: without a home folder, the log goes to a per-user
//     folder of the temporary folder, agentls-<uid>, made 0700 and used
//     only while it is a folder of this user that no one else may write
//     (Private).

// Name is the folder's name in the user's state and configuration folders.
const Name = "agentls"

// StateBase is the user's state folder ($XDG_STATE_HOME, else
// ~/.local/state), "" when getenv names neither an absolute
// XDG_STATE_HOME nor HOME.
func StateBase(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state")
	}
	return ""
}

// StateHome is StateBase/agentls, or "".
func StateHome(getenv func(string) string) string {
	if b := StateBase(getenv); b != "" {
		return filepath.Join(b, Name)
	}
	return ""
}

// ConfigHome is the user's configuration folder of agentls, or "".
func ConfigHome(getenv func(string) string) string {
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, Name)
		}
		return ""
	}
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(filepath.Clean(d), Name)
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".config", Name)
	}
	return ""
}

// TempBase is the temporary folder getenv names (TMPDIR, else /tmp).
func TempBase(getenv func(string) string) string {
	if d := getenv("TMPDIR"); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return os.TempDir()
}

// TempName is the name of this user's fallback folder in TempBase.
func TempName() string { return Name + "-" + strconv.Itoa(os.Getuid()) }

// Folders are the folders agentls keeps its own files in outside the
// workspace, as getenv sets them: StateHome (or, without it, the
// temporary fallback) and ConfigHome.
func Folders(getenv func(string) string) []string {
	var out []string
	if s := StateHome(getenv); s != "" {
		out = append(out, s)
	} else {
		out = append(out, filepath.Join(TempBase(getenv), TempName()))
	}
	if c := ConfigHome(getenv); c != "" {
		out = append(out, c)
	}
	return out
}

// OpenState opens StateHome, creating it (0700) and the user's state
// folder when missing; without a home folder, or when StateHome cannot be
// used, the temporary fallback (Private). fellBack says why StateHome
// was not used, when it was not.
func OpenState(getenv func(string) string) (d *Dir, fellBack, err error) {
	var why error
	if base := StateBase(getenv); base != "" {
		if err := os.MkdirAll(base, 0o700); err != nil {
			why = err
		} else if d, err := Open(base, Name, true, 0o700); err == nil {
			return d, nil, nil
		} else {
			why = err
		}
	}
	d, err = Private(TempBase(getenv), TempName())
	return d, why, err
}

// ReplaceFile replaces the file path (in a folder of agentls's own, such
// as ConfigHome) with data, atomically: the folder's parent is created as
// the OS resolves it (a folder the user chose), the folder itself (made
// 0700) and the file are reached without following a link.
func ReplaceFile(path string, data []byte, perm os.FileMode) error {
	d, err := openParent(path, true)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(filepath.Base(path), data, perm)
}

// ReadOwnFile reads the file path of a folder of agentls's own, following
// no link at the folder's name or the file's.
func ReadOwnFile(path string) ([]byte, error) {
	d, err := openParent(path, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(filepath.Base(path))
}

func openParent(path string, create bool) (*Dir, error) {
	dir := filepath.Dir(filepath.Clean(path))
	base := filepath.Dir(dir)
	if create {
		if err := os.MkdirAll(base, 0o700); err != nil {
			return nil, err
		}
	}
	return Open(base, filepath.Base(dir), create, 0o700)
}
