package langserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/tools"
)

// language is one language agentls knows a server for.
type language struct {
	name       string
	exts       []string
	markers    []string // files at a root that say the workspace is in this language
	defaults   []Config // tried in order; the first on PATH is used
	needs      []string // programs the defaults run themselves (gopls runs go)
	languageID func(ext string) string
}

var languages = []language{
	{name: "go", exts: []string{".go"}, markers: []string{"go.mod", "go.work"},
		defaults: []Config{{Command: "gopls"}}, needs: []string{"go"}},
	{name: "python", exts: []string{".py", ".pyi"}, markers: []string{"pyproject.toml", "setup.py", "requirements.txt"},
		defaults: []Config{{Command: "basedpyright-langserver", Args: []string{"--stdio"}}, {Command: "pyright-langserver", Args: []string{"--stdio"}}}},
	{name: "typescript", exts: []string{".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"}, markers: []string{"tsconfig.json", "package.json"},
		defaults: []Config{{Command: "typescript-language-server", Args: []string{"--stdio"}}},
		languageID: func(ext string) string {
			switch ext {
			case ".tsx":
				return "typescriptreact"
			case ".jsx":
				return "javascriptreact"
			case ".js", ".mjs", ".cjs":
				return "javascript"
			}
			return "typescript"
		}},
	{name: "rust", exts: []string{".rs"}, markers: []string{"Cargo.toml"},
		defaults: []Config{{Command: "rust-analyzer"}}},
	{name: "c", exts: []string{".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh"}, markers: []string{"compile_commands.json", "CMakeLists.txt"},
		defaults: []Config{{Command: "clangd"}},
		languageID: func(ext string) string {
			if ext == ".c" || ext == ".h" {
				return "c"
			}
			return "cpp"
		}},
}

// languageOf is the language of file by its extension, or nil.
func languageOf(file string) *language {
	ext := strings.ToLower(filepath.Ext(file))
	for i := range languages {
		if slices.Contains(languages[i].exts, ext) {
			return &languages[i]
		}
	}
	return nil
}

func (l *language) id(file string) string {
	if l.languageID != nil {
		return l.languageID(strings.ToLower(filepath.Ext(file)))
	}
	return l.name
}

// Languages lists the languages agentls has default servers for.
func Languages() []string {
	out := make([]string, len(languages))
	for i, l := range languages {
		out[i] = l.name
	}
	return out
}

// DefaultIdle is how long a server may go unused before it is stopped.
const DefaultIdle = 10 * time.Minute

// retryAfter: a server that failed to start is not started again for
// this long; each call in between gets the same error at once.
const retryAfter = 30 * time.Second

// Pool is the language servers agentls runs for one workspace (one host):
// one per language, started on the first request for it, stopped when
// idle and at Close. Its methods are safe for concurrent use.
type Pool struct {
	idle time.Duration

	mu       sync.Mutex // guards the fields below
	clients  map[string]*client
	starting map[string]chan struct{} // closed when a start ends
	failed   map[string]failure
	roots    []string
	configs  map[string]Config // user settings by language
	sandbox  string
	closed   bool
	janitor  chan struct{} // closed by Close: stops the idle sweep
}

type failure struct {
	err error
	at  time.Time
}

// NewPool returns a pool whose servers stop after idle without a request
// (DefaultIdle when 0).
func NewPool(idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	p := &Pool{idle: idle, clients: map[string]*client{}, starting: map[string]chan struct{}{}, failed: map[string]failure{}, janitor: make(chan struct{})}
	go p.sweep()
	return p
}

// Configure sets the workspace roots, the user's server settings (by
// language; they replace the defaults) and the commands' sandbox setting.
// A change of roots or of a language's setting stops the servers it
// concerns; they start again on their next request.
func (p *Pool) Configure(roots []string, configs map[string]Config, sandbox string) {
	p.mu.Lock()
	var stop []*client
	if !slices.Equal(p.roots, roots) || p.sandbox != sandbox {
		for l, c := range p.clients {
			stop = append(stop, c)
			delete(p.clients, l)
		}
		clear(p.failed)
	} else {
		for l, c := range p.clients {
			if !sameConfig(p.configs[l], configs[l]) {
				stop = append(stop, c)
				delete(p.clients, l)
				delete(p.failed, l)
			}
		}
	}
	p.roots, p.configs, p.sandbox = slices.Clone(roots), configs, sandbox
	p.mu.Unlock()
	for _, c := range stop {
		go c.shutdown()
	}
}

func sameConfig(a, b Config) bool {
	return a.Command == b.Command && slices.Equal(a.Args, b.Args) && string(a.InitializationOptions) == string(b.InitializationOptions)
}

// ErrNoServer is the error for a file of a language without a server (none
// configured and no default on PATH).
var ErrNoServer = errors.New("no language server")

// config is the server for lang: the user's setting, else the first
// default on PATH.
func (p *Pool) config(l *language, roots []string) (Config, error) {
	if c, ok := p.configs[l.name]; ok && c.Command != "" {
		return c, nil
	}
	var names []string
	for _, c := range l.defaults {
		if _, err := tools.LookPath(c.Command, roots); err == nil {
			// Without the program it runs, a default starts and then
			// answers nothing useful (gopls without go: "no views").
			for _, need := range l.needs {
				if _, err := tools.LookPath(need, roots); err != nil {
					return Config{}, fmt.Errorf("%w for %s: %s is installed but the %s command it runs is not on agentls's PATH (%w)", ErrNoServer, l.name, c.Command, need, err)
				}
			}
			return c, nil
		}
		names = append(names, c.Command)
	}
	return Config{}, fmt.Errorf("%w for %s: none of %s is installed (set languageServers.%s in the settings)", ErrNoServer, l.name, strings.Join(names, ", "), l.name)
}

// Available reports whether some language of the workspace has a server:
// one configured, or a default on PATH.
func (p *Pool) Available() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range languages {
		if _, err := p.config(&languages[i], p.roots); err == nil {
			return true
		}
	}
	return false
}

// client returns the running server of l, starting it when needed.
func (p *Pool) client(ctx context.Context, l *language) (*client, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errors.New("the language servers are shut down")
		}
		if c := p.clients[l.name]; c != nil {
			if c.alive() {
				p.mu.Unlock()
				return c, nil
			}
			delete(p.clients, l.name)
			c.mu.Lock()
			err := c.exitErr
			c.mu.Unlock()
			p.failed[l.name] = failure{err: &Error{Server: c.cfg.Name(), Op: "run", Err: fmt.Errorf("it stopped: %w", err), Stderr: c.stderr.String()}, at: time.Now()}
		}
		if f, ok := p.failed[l.name]; ok && time.Since(f.at) < retryAfter {
			p.mu.Unlock()
			return nil, f.err
		}
		if wait, ok := p.starting[l.name]; ok {
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if len(p.roots) == 0 {
			p.mu.Unlock()
			return nil, errors.New("no workspace folder")
		}
		cfg, err := p.config(l, p.roots)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		done := make(chan struct{})
		p.starting[l.name] = done
		roots, sandbox := p.roots, p.sandbox
		p.mu.Unlock()

		c, err := start(ctx, l.name, cfg, startOptions{Roots: roots, Sandbox: sandbox})
		p.mu.Lock()
		delete(p.starting, l.name)
		close(done)
		if err != nil {
			p.failed[l.name] = failure{err: err, at: time.Now()}
		} else if p.closed {
			err = errors.New("the language servers are shut down")
			go c.shutdown()
		} else {
			delete(p.failed, l.name)
			p.clients[l.name] = c
		}
		p.mu.Unlock()
		return c, err
	}
}

// Request sends method about file (absolute; text is its current text,
// which the server is given first) and decodes the answer into result. It
// returns the name of the server that answered.
func (p *Pool) Request(ctx context.Context, file, text, method string, params, result any) (string, error) {
	l := languageOf(file)
	if l == nil {
		return "", fmt.Errorf("%w for %s files", ErrNoServer, filepath.Ext(file))
	}
	c, err := p.client(ctx, l)
	if err != nil {
		return "", err
	}
	if _, err := c.sync(ctx, uri.File(file), l.id(file), text); err != nil {
		return c.cfg.Name(), err
	}
	return c.cfg.Name(), c.Call(ctx, method, params, result)
}

// WorkspaceRequest sends a request about no document (workspace/symbol)
// to the servers of the workspace's languages: those running, else those
// whose marker files (go.mod, Cargo.toml, ...) are at a root.
func (p *Pool) WorkspaceRequest(ctx context.Context, method string, params any, each func(server string, decode func(result any) error)) error {
	p.mu.Lock()
	var langs []*language
	for i := range languages {
		if p.clients[languages[i].name] != nil {
			langs = append(langs, &languages[i])
		}
	}
	if len(langs) == 0 {
		for i := range languages {
			for _, r := range p.roots {
				if slices.ContainsFunc(languages[i].markers, func(m string) bool {
					_, err := os.Stat(filepath.Join(r, m))
					return err == nil
				}) {
					langs = append(langs, &languages[i])
					break
				}
			}
		}
	}
	p.mu.Unlock()
	if len(langs) == 0 {
		return fmt.Errorf("%w: no language server runs and no root has a project file agentls knows (go.mod, Cargo.toml, package.json, pyproject.toml, ...): name a file", ErrNoServer)
	}
	var errs []error
	for _, l := range langs {
		c, err := p.client(ctx, l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		each(c.cfg.Name(), func(result any) error { return c.Call(ctx, method, params, result) })
	}
	return errors.Join(errs...)
}

// Diagnostics gives file's text to its server and waits (up to wait) for
// the diagnostics of that text. ok is false when no server serves file.
func (p *Pool) Diagnostics(ctx context.Context, file, text string, wait time.Duration) (ds []Diagnostic, server string, ok bool) {
	l := languageOf(file)
	if l == nil {
		return nil, "", false
	}
	c, err := p.client(ctx, l)
	if err != nil {
		return nil, "", false
	}
	v, err := c.sync(ctx, uri.File(file), l.id(file), text)
	if err != nil {
		return nil, "", false
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ds, _, ok = c.diagnostics(ctx, uri.File(file), v)
	return ds, c.cfg.Name(), ok
}

// sweep stops servers unused for p.idle, until Close.
func (p *Pool) sweep() {
	t := time.NewTicker(min(p.idle/4, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-p.janitor:
			return
		case <-t.C:
		}
		p.mu.Lock()
		var stop []*client
		for l, c := range p.clients {
			c.mu.Lock()
			idle := c.inflight == 0 && time.Since(c.lastUse) > p.idle
			c.mu.Unlock()
			if idle {
				stop = append(stop, c)
				delete(p.clients, l)
			}
		}
		p.mu.Unlock()
		for _, c := range stop {
			c.shutdown()
		}
	}
}

// Running lists the servers running now, by language.
func (p *Pool) Running() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for l, c := range p.clients {
		if c.alive() {
			out[l] = c.cfg.Name()
		}
	}
	return out
}

// Close stops every server (shutdown within closeGrace, then kill) and
// waits for them.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.janitor)
	cs := make([]*client, 0, len(p.clients))
	for _, c := range p.clients {
		cs = append(cs, c)
	}
	clear(p.clients)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { c.shutdownWithin(closeGrace) })
	}
	wg.Wait()
	return nil
}

// closeGrace is how long Close waits for a server's shutdown reply and
// then its exit before killing it: the host ends when the command line or
// the editor's session ends, and that must not wait on a busy server.
const closeGrace = 300 * time.Millisecond
