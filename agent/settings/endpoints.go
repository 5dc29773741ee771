package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// EndpointsFileName holds the model endpoints the user confirmed, in the
// user's agentls folder: out of every workspace, so a repository cannot
// add one.
const EndpointsFileName = "endpoints.json"

// Endpoints remember the model endpoints the user confirmed once (a
// baseURL from the client that the user-level settings do not name): the
// host asks for an endpoint only until the user said yes to it. An
// endpoint is what the host keys it by (the base URL's scheme, host and
// port, and the variable the key comes from), so a yes is bound to that
// URL and key. Safe for concurrent use.
type Endpoints struct {
	dir string
	mu  sync.Mutex
}

type endpointsFile struct {
	Endpoints []string `json:"endpoints"`
}

// Path is the file the confirmations are kept in ("" when there is no
// user folder: nothing is remembered).
func (e *Endpoints) Path() string {
	if e == nil || e.dir == "" {
		return ""
	}
	return filepath.Join(e.dir, EndpointsFileName)
}

func (e *Endpoints) read() ([]string, error) {
	path := e.Path()
	if path == "" {
		return nil, nil
	}
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s is not a regular file only you can write: ignored", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f endpointsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Endpoints, nil
}

// Confirmed reports whether the user confirmed endpoint.
func (e *Endpoints) Confirmed(endpoint string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	list, err := e.read()
	return err == nil && slices.Contains(list, endpoint)
}

// Confirm remembers that the user confirmed endpoint.
func (e *Endpoints) Confirm(endpoint string) error {
	if e.Path() == "" {
		return errors.New("no user configuration folder: the confirmation holds until agentls restarts")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	list, err := e.read()
	if err != nil {
		return err
	}
	if slices.Contains(list, endpoint) {
		return nil
	}
	b, _ := json.MarshalIndent(endpointsFile{Endpoints: append(list, endpoint)}, "", "  ")
	return writePrivate(e.Path(), append(b, '\n'))
}
