package permission

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentls/agentls/workspace/ownfs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Scope is how long a remembered answer holds.
type Scope int

const (
	// Once: nothing is remembered.
	Once Scope = iota
	// Task: for the rest of the task (or conversation) named by the owner.
	Task
	// Session: until agentls exits.
	Session
	// Root: for the workspace root named by the owner, kept on disk in the
	// user's configuration folder.
	Root
	// Always: everywhere, kept on disk in the user's configuration folder.
	Always
)

func (s Scope) String() string {
	switch s {
	case Once:
		return "once"
	case Task:
		return "task"
	case Session:
		return "session"
	case Root:
		return "root"
	case Always:
		return "always"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Namespaces of remembered keys: what a key names.
const (
	NSCommand  = "command"  // a safe-command prefix ("go test")
	NSTool     = "tool"     // a tool by name (MCP, language servers)
	NSWrites   = "writes"   // writing files (key "")
	NSSecret   = "secret"   // a secret file by workspace-relative path
	NSDeny     = "deny"     // a "reject always" answer (denyKey)
	NSMCPFile  = "mcp"      // a workspace .mcp.json by content hash
	NSEndpoint = "endpoint" // the settings a user consented to (model endpoint)
)

// Store keeps the user's remembered answers, one place for every scope:
// Task and Session in memory, Root and Always in files of the user's
// configuration folder. The Root files are the ones earlier versions
// wrote (allowed-commands.json for commands and tools, approved-mcp.json
// for workspace .mcp.json files), read and written as they were, so a
// user's earlier answers still hold.
type Store struct {
	// Dir is the folder of the files (os.UserConfigDir()/agentls when
	// empty, resolved at each use so tests may move it).
	Dir string

	mu  sync.Mutex // guards mem
	mem map[memKey]bool
}

// filesMu serialises reads and writes of the files, whichever Store
// (of this process) reads or writes them.
var filesMu sync.Mutex

type memKey struct {
	scope          Scope
	owner, ns, key string
}

// NewStore returns an empty store over the files of dir ("" for the
// user's configuration folder).
func NewStore(dir string) *Store { return &Store{Dir: dir} }

func (s *Store) dir() (string, error) {
	if s.Dir != "" {
		return s.Dir, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("remembered answers: %w", err)
	}
	return filepath.Join(d, "agentls"), nil
}

// File names in the store's folder.
const (
	AllowedCommandsName = "allowed-commands.json" // Root: command prefixes and tool names
	ApprovedMCPName     = "approved-mcp.json"     // Root: .mcp.json content hashes
	AlwaysName          = "permissions.json"      // Always: keys per namespace
)

// rootFile is the file a Root answer of ns is kept in.
func rootFile(ns string) (string, bool) {
	switch ns {
	case NSCommand, NSTool:
		return AllowedCommandsName, true
	case NSMCPFile:
		return ApprovedMCPName, true
	}
	return "", false
}

// rootsFile is the content of the Root files.
type rootsFile struct {
	Roots map[string][]string `json:"roots"`
}

// alwaysFile is the content of AlwaysName.
type alwaysFile struct {
	Always map[string][]string `json:"always"` // namespace -> keys
}

// Remember keeps the answer allow to key (of namespace ns) for scope and
// owner (the task or conversation for Task, the root for Root and
// Session, unused for Always). Root and Always keep allows only, on disk.
func (s *Store) Remember(scope Scope, owner, ns, key string, allow bool) error {
	switch scope {
	case Once:
		return nil
	case Task, Session:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.mem == nil {
			s.mem = map[memKey]bool{}
		}
		s.mem[memKey{scope, owner, ns, key}] = allow
		return nil
	}
	if !allow {
		return fmt.Errorf("a refusal is not kept %s", scope)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	dir, err := s.dir()
	if err != nil {
		return err
	}
	if scope == Root {
		name, ok := rootFile(ns)
		if !ok {
			return fmt.Errorf("%s answers are not kept for a root", ns)
		}
		var f rootsFile
		path := filepath.Join(dir, name)
		if err := readJSON(path, &f); err != nil {
			return err
		}
		owner = filepath.Clean(owner)
		if slices.Contains(f.Roots[owner], key) {
			return nil
		}
		if f.Roots == nil {
			f.Roots = map[string][]string{}
		}
		f.Roots[owner] = append(f.Roots[owner], key)
		return writeJSON(path, f)
	}
	var f alwaysFile
	path := filepath.Join(dir, AlwaysName)
	if err := readJSON(path, &f); err != nil {
		return err
	}
	if slices.Contains(f.Always[ns], key) {
		return nil
	}
	if f.Always == nil {
		f.Always = map[string][]string{}
	}
	f.Always[ns] = append(f.Always[ns], key)
	return writeJSON(path, f)
}

// Keys returns the keys of ns remembered for scope and owner with the
// answer allow.
func (s *Store) Keys(scope Scope, owner, ns string, allow bool) ([]string, error) {
	switch scope {
	case Once:
		return nil, nil
	case Task, Session:
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []string
		for k, v := range s.mem {
			if k.scope == scope && k.owner == owner && k.ns == ns && v == allow {
				out = append(out, k.key)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	if !allow {
		return nil, nil
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	dir, err := s.dir()
	if err != nil {
		return nil, err
	}
	if scope == Root {
		name, ok := rootFile(ns)
		if !ok {
			return nil, nil
		}
		var f rootsFile
		err := readJSON(filepath.Join(dir, name), &f)
		return f.Roots[filepath.Clean(owner)], err
	}
	var f alwaysFile
	err = readJSON(filepath.Join(dir, AlwaysName), &f)
	return f.Always[ns], err
}

// Answer returns the answer remembered for exactly key at scope and owner.
func (s *Store) Answer(scope Scope, owner, ns, key string) (allow, found bool, err error) {
	if scope == Task || scope == Session {
		s.mu.Lock()
		defer s.mu.Unlock()
		allow, found = s.mem[memKey{scope, owner, ns, key}]
		return allow, found, nil
	}
	keys, err := s.Keys(scope, owner, ns, true)
	return slices.Contains(keys, key), slices.Contains(keys, key), err
}

// Path is the file the answers of ns at scope are kept in ("" when kept
// in memory).
func (s *Store) Path(scope Scope, ns string) (string, error) {
	dir, err := s.dir()
	if err != nil {
		return "", err
	}
	switch scope {
	case Root:
		name, ok := rootFile(ns)
		if !ok {
			return "", nil
		}
		return filepath.Join(dir, name), nil
	case Always:
		return filepath.Join(dir, AlwaysName), nil
	}
	return "", nil
}

func readJSON(path string, v any) error {
	b, err := ownfs.ReadOwnFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remembered answers: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("remembered answers %s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path atomically (a rename inside agentls's folder,
// following no link), readable by the user only.
func writeJSON(path string, v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := ownfs.ReplaceFile(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("remembered answers: %w", err)
	}
	return nil
}
