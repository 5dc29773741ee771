package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentls/agentls/tools"
	"github.com/agentls/agentls/tools/netproxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	defaultStartTimeout = 10 * time.Second
	// FirstStartTimeout bounds a server's first start when its
	// configuration sets no startTimeout: `npx -y` and `uvx` download the
	// server first, which takes longer than a start.
	FirstStartTimeout  = 120 * time.Second
	defaultCallTimeout = 60 * time.Second
	// StderrTail bounds what is kept of a server's stderr for its errors:
	// the end, where a program says why it failed.
	StderrTail = 2 << 10
)

// Launch is how the stdio servers of one workspace start: in its primary
// root, tracked with its commands. Where a server came from decides how
// it runs (UserProgram).
type Launch struct {
	Dir       string
	Roots     []string
	Sandbox   string // the sandbox setting: "" (workspace-write) or "off"
	SecretEnv []string
	Commands  *tools.Commands // KillAll reaches the servers; nil: untracked
	// Getenv expands ${NAME} in the configurations; nil: os.Getenv.
	Getenv func(string) string
	// StateDir holds a folder per server of a workspace's .mcp.json
	// (StateDir/<name>), the only one that server may write; outside every
	// workspace, under agentls's state. Such a server does not start
	// without it.
	StateDir string
	// Proxy is the allowlist proxy (the user's commandNetwork list): a
	// sandboxed server without network of its own gets the network through
	// it (tools.SandboxOptions.Proxy); nil: none.
	Proxy *netproxy.Proxy
	// Progress shows the user a start under way ("starting MCP server
	// github: npx may be downloading it") and a wait for one; nil: none.
	Progress func(string)
	// Failure shows the user a call that failed for the server's sake (it
	// did not start, ended, did not answer) and a background start that
	// failed, with the end of its stderr; nil: only the log.
	Failure func(string)
}

// OwnFolder is the folder a workspace's server may write: StateDir/<name>.
func (l Launch) OwnFolder(name string) string {
	if l.StateDir == "" {
		return ""
	}
	return filepath.Join(l.StateDir, name)
}

// UserProgram reports whether a server of c's source runs as the user's
// own program (no filesystem sandbox, the user's environment without
// agentls's secrets): the user's settings and the ACP client's servers,
// as Claude Code and Codex run them. Anything else (a workspace's
// .mcp.json, a source not set) is the repository's and stays sandboxed.
func UserProgram(c ServerConfig) bool { return c.Source == FromSettings || c.Source == FromClient }

// server is one configured MCP server of a Manager: at most one live
// connection (and, for stdio, one process) at a time, made on demand and
// made again after it ended.
type server struct {
	cfg    ServerConfig // as configured (${NAME} not expanded)
	launch Launch
	log    *slog.Logger

	dialMu sync.Mutex // serialises connecting; held while a server starts

	mu     sync.Mutex // guards the fields below; never held while waiting on the server
	conn   *conn      // nil when not connected
	tools  []*sdk.Tool
	listed bool // tools holds the server's list (until it says it changed)
	gen    int  // counts tools/list_changed notifications
	closed bool
	// failed is when listing last failed, and why: a server that does not
	// start is not tried again for retryAfter, so a hanging one does not
	// cost every task its start timeout.
	failed    time.Time
	failedErr error
	// started: a connection was made once; later starts get the short
	// start timeout.
	started bool
	// inflight is closed when the listing under way ends; nil when none
	// is: a task that needs the server waits for the start under way
	// (the background one of the session) instead of starting another.
	inflight chan struct{}
	lastErr  error // how the last listing ended
}

// errStartTimeout marks a server that did not answer within its start
// timeout: it is left alone for retryAfter, unlike one that exited (which
// starts again at the next need).
var errStartTimeout = errors.New("start timed out")

// retryAfter is how long a server that could not be listed is left alone.
const retryAfter = 30 * time.Second

// conn is one connection to a server, with its process for stdio.
type conn struct {
	sess     *sdk.ClientSession
	sessDone chan struct{} // closed when the SDK's session ended (EOF, closed)
	ended    chan struct{} // closed when the process (or the connection) ended
	why      func() string // how it ended, once ended is closed
	stop     func()        // ends the connection and the process
	stderr   *tools.Tail
	over     *overLimit // what the server sent over a bound, if it did
}

// tooLarge is the error of a call or a listing on a connection that the
// server ended by sending more than a bound allows, nil when it did not.
// The connection is stopped: the next call starts the server again.
func (s *server) tooLarge(c *conn) error {
	why := c.over.why()
	if why == "" {
		return nil
	}
	c.stop() // before the error: the next call must find it dead and start it again
	return fmt.Errorf("the MCP server %q sent %s, over the limit of %d bytes: it was not read, and the connection was stopped (it starts again on the next call)", s.cfg.Name, why, MaxMessageBytes)
}

func (c *conn) isEnded() bool {
	select {
	case <-c.ended:
		return true
	default:
		return false
	}
}

// dead reports whether the connection can take no more calls.
func (c *conn) dead() bool {
	if c.isEnded() {
		return true
	}
	select {
	case <-c.sessDone:
		return true
	default:
		return false
	}
}

// watch closes sessDone when the session ends.
func (c *conn) watch() {
	c.sessDone = make(chan struct{})
	go func() {
		_ = c.sess.Wait()
		close(c.sessDone)
	}()
}

// endedWhy waits a moment for a connection that failed to end, and says
// how it ended; "" when it is still running (then it is stopped: a
// connection that failed takes no more calls).
func (c *conn) endedWhy() string {
	select {
	case <-c.ended:
		return c.why()
	case <-time.After(2 * time.Second):
		c.stop()
		return ""
	}
}

func (s *server) startTimeout() time.Duration {
	if s.cfg.StartTimeout > 0 {
		return time.Duration(s.cfg.StartTimeout * float64(time.Second))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return FirstStartTimeout
	}
	return defaultStartTimeout
}

// downloader names the program that fetches the server before it starts
// (npx, uvx, ...), "" for one that is installed.
func downloader(c ServerConfig) string {
	switch b := filepath.Base(c.Command); b {
	case "npx", "uvx", "bunx", "pipx":
		return b
	case "pnpm", "yarn", "bun", "uv":
		if len(c.Args) > 0 && (c.Args[0] == "dlx" || c.Args[0] == "x" || c.Args[0] == "tool") {
			return b + " " + c.Args[0]
		}
	}
	return ""
}

// startingText is the progress line of a server that is starting.
func (s *server) startingText() string {
	if d := downloader(s.cfg); d != "" {
		return fmt.Sprintf("starting MCP server %s: %s may be downloading it (up to %s)", s.cfg.Name, d, s.startTimeout())
	}
	return fmt.Sprintf("starting MCP server %s (up to %s)", s.cfg.Name, s.startTimeout())
}

func (s *server) callTimeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return time.Duration(s.cfg.Timeout * float64(time.Second))
	}
	return defaultCallTimeout
}

// connected returns the live connection, making one when there is none
// (or the last one ended), within the start timeout.
func (s *server) connected(ctx context.Context) (*conn, error) {
	s.dialMu.Lock()
	defer s.dialMu.Unlock()
	stopped := fmt.Errorf("the MCP server %q was stopped (its session ended)", s.cfg.Name)
	s.mu.Lock()
	closed, old := s.closed, s.conn
	s.mu.Unlock()
	if closed {
		return nil, stopped
	}
	if old != nil && !old.dead() {
		return old, nil
	}
	if old != nil {
		old.stop()
	}
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed = s.closed
	if !closed {
		s.conn, s.started = c, true
	}
	s.mu.Unlock()
	if closed {
		c.stop()
		return nil, stopped
	}
	return c, nil
}

// client is the SDK client of one connection: a tools/list_changed
// notification marks the list stale, for the next task.
func (s *server) client() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "agentls", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.mu.Lock()
			s.listed = false
			s.gen++
			s.mu.Unlock()
			s.log.Info("mcp server's tools changed: listed again for the next task", "server", s.cfg.Name)
		},
	})
}

// dial connects to the server, starting it first when it is a stdio one.
func (s *server) dial(ctx context.Context) (*conn, error) {
	cfg := s.cfg.Expanded(s.launch.Getenv)
	if !cfg.Stdio() {
		return s.dialHTTP(ctx, cfg)
	}
	var env []string
	user := UserProgram(s.cfg)
	sb := tools.SandboxOptions{Mode: s.launch.Sandbox, Network: cfg.NetworkAllowed(), Roots: s.launch.Roots}
	if !sb.Network {
		sb.Proxy = s.launch.Proxy
	}
	if !user {
		// The repository's server: sandboxed, writing only its own folder
		// (its temporary and cache folders inside it).
		own := s.launch.OwnFolder(s.cfg.Name)
		if own == "" {
			return nil, fmt.Errorf("the MCP server %q of the workspace was not started: it has no folder of its own to write", s.cfg.Name)
		}
		sb.WritableOnly = []string{own}
		for _, d := range []string{"tmp", "cache"} {
			if err := os.MkdirAll(filepath.Join(own, d), 0o700); err != nil {
				return nil, fmt.Errorf("the MCP server %q: its own folder: %w", s.cfg.Name, err)
			}
		}
		env = append(env, "TMPDIR="+filepath.Join(own, "tmp"), "XDG_CACHE_HOME="+filepath.Join(own, "cache"),
			"npm_config_cache="+filepath.Join(own, "cache", "npm"))
	}
	inR, inW, err := os.Pipe() // the server's stdin
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // its stdout
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		env = append(env, k+"="+cfg.Env[k])
	}
	procCtx, kill := context.WithCancel(context.Background())
	c := &conn{ended: make(chan struct{}), stderr: &tools.Tail{Max: StderrTail}, over: &overLimit{}}
	var res tools.RunResult
	var runErr error
	go func() {
		defer close(c.ended)
		res, runErr = tools.Run(procCtx, tools.RunSpec{
			Argv: append([]string{cfg.Command}, cfg.Args...), Dir: s.launch.Dir,
			SecretEnv: s.launch.SecretEnv, ExtraEnv: env,
			Stdin: inR, Stdout: outW, Stderr: c.stderr,
			Sandbox: sb, UserProgram: user,
			Commands: s.launch.Commands,
		})
		// The server is gone: its output ends (the SDK reads EOF and
		// fails what is pending) and nothing more can be written to it.
		inR.Close()
		outW.Close()
	}()
	c.why = func() string {
		var b strings.Builder
		switch {
		case runErr != nil:
			fmt.Fprintf(&b, "it could not be started: %v", runErr)
		case res.Signal != "":
			fmt.Fprintf(&b, "it was killed by %s", res.Signal)
		default:
			fmt.Fprintf(&b, "it exited with code %d", res.ExitCode)
		}
		if t := strings.TrimSpace(c.stderr.String()); t != "" {
			fmt.Fprintf(&b, "; its stderr ends with:\n%s", t)
		}
		return b.String()
	}
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			if c.sess != nil {
				_ = c.sess.Close()
			}
			kill()
			inW.Close()
			<-c.ended
			outR.Close()
		})
	}
	// Each line is bounded before the SDK's decoder holds it; the SDK's own
	// bound is a backstop above it.
	in := readCloser{Reader: &lineLimit{r: outR, max: MaxMessageBytes, over: c.over}, Closer: outR}
	sess, err := s.client().Connect(ctx, &sdk.IOTransport{Reader: in, Writer: inW, MaxLineLength: 2 * MaxMessageBytes}, nil)
	if err != nil {
		return nil, s.startError(ctx, c, err)
	}
	c.sess = sess
	c.watch()
	return c, nil
}

// startError stops what dial started and says why the server is not
// there.
func (s *server) startError(ctx context.Context, c *conn, err error) error {
	timedOut := ctx.Err() != nil
	if !timedOut {
		// It ended, most often: give it a moment to say why.
		select {
		case <-c.ended:
		case <-time.After(2 * time.Second):
		}
	}
	ended := c.isEnded()
	c.stop()
	switch {
	case ended:
		return fmt.Errorf("the MCP server %q did not start: %s", s.cfg.Name, c.why())
	case timedOut:
		msg := fmt.Sprintf("the MCP server %q did not answer within %s of starting; it was stopped", s.cfg.Name, s.startTimeout())
		if t := strings.TrimSpace(c.stderr.String()); t != "" {
			msg += "; its stderr ends with:\n" + t
		}
		return fmt.Errorf("%w", timeoutError{msg})
	}
	return fmt.Errorf("the MCP server %q did not start: %w", s.cfg.Name, err)
}

// dialHTTP connects to a streamable HTTP (or legacy SSE) server, with the
// configured headers on every request.
func (s *server) dialHTTP(ctx context.Context, cfg ServerConfig) (*conn, error) {
	over := &overLimit{}
	hc := httpClient(cfg, over)
	var t sdk.Transport = &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, MaxRetries: 1, MaxEventSize: 2 * MaxMessageBytes}
	if cfg.Type == "sse" {
		t = &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: hc, MaxEventSize: 2 * MaxMessageBytes}
	}
	sess, err := s.client().Connect(ctx, t, nil)
	if err != nil {
		if why := over.why(); why != "" {
			return nil, fmt.Errorf("the MCP server %q (%s) sent %s, over the limit of %d bytes", s.cfg.Name, cfg.URL, why, MaxMessageBytes)
		}
		if ctx.Err() != nil {
			return nil, timeoutError{fmt.Sprintf("the MCP server %q (%s) did not answer within %s", s.cfg.Name, cfg.URL, s.startTimeout())}
		}
		return nil, fmt.Errorf("the MCP server %q (%s) could not be reached: %w", s.cfg.Name, cfg.URL, err)
	}
	c := &conn{sess: sess, ended: make(chan struct{}), stderr: &tools.Tail{Max: 1}, over: over}
	c.sessDone = c.ended
	var whyErr error
	go func() {
		whyErr = sess.Wait()
		close(c.ended)
	}()
	c.why = func() string {
		if whyErr != nil {
			return "its connection ended: " + whyErr.Error()
		}
		return "its connection ended"
	}
	var once sync.Once
	c.stop = func() { once.Do(func() { _ = sess.Close(); <-c.ended }) }
	return c, nil
}

// timeoutError is a start that timed out (errors.Is errStartTimeout).
type timeoutError struct{ msg string }

func (e timeoutError) Error() string        { return e.msg }
func (e timeoutError) Is(target error) bool { return target == errStartTimeout }

// list returns the server's tools, asking the server (starting it when
// needed) unless the list is known and has not changed since. One listing
// runs at a time: a caller that finds one under way (the session's
// background start) waits for it, told through progress, and gets its
// outcome. A server that did not answer within its start timeout is left
// alone for retryAfter; one that exited or could not start is tried again
// at the next need.
func (s *server) list(ctx context.Context, progress func(string)) ([]*sdk.Tool, error) {
	s.mu.Lock()
	if s.listed {
		defer s.mu.Unlock()
		return s.tools, nil
	}
	if errors.Is(s.failedErr, errStartTimeout) && time.Since(s.failed) < retryAfter {
		err := s.failedErr
		ago := time.Since(s.failed).Round(time.Second)
		s.mu.Unlock()
		return nil, fmt.Errorf("%w (tried %s ago; tried again %s after that)", err, ago, retryAfter)
	}
	if wait := s.inflight; wait != nil {
		s.mu.Unlock()
		if progress != nil {
			progress("waiting for the MCP server " + s.cfg.Name + " to start: " + s.startingText())
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("the MCP server %q: %w", s.cfg.Name, ctx.Err())
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.listed {
			return s.tools, nil
		}
		return nil, s.lastErr
	}
	done := make(chan struct{})
	s.inflight = done
	gen, first := s.gen, !s.started
	s.mu.Unlock()
	if first && progress != nil {
		progress(s.startingText())
	}
	got, err := s.listNow(ctx, gen)
	s.mu.Lock()
	s.inflight, s.lastErr = nil, err
	if err != nil {
		s.failed, s.failedErr = time.Now(), err
	} else {
		s.failed, s.failedErr = time.Time{}, nil
	}
	close(done)
	s.mu.Unlock()
	return got, err
}

func (s *server) listNow(ctx context.Context, gen int) ([]*sdk.Tool, error) {
	c, err := s.connected(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	var out []*sdk.Tool
	for t, err := range c.sess.Tools(ctx, nil) {
		if err != nil {
			if err := s.tooLarge(c); err != nil {
				return nil, err
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("the MCP server %q did not list its tools within %s", s.cfg.Name, s.startTimeout())
			}
			return nil, fmt.Errorf("the MCP server %q did not list its tools: %w", s.cfg.Name, err)
		}
		out = append(out, t)
		if len(out) > MaxTools {
			break // one more than is offered: enough to say there are more
		}
	}
	s.mu.Lock()
	s.tools, s.listed = out, s.gen == gen // a change announced meanwhile: list again next time
	s.mu.Unlock()
	return out, nil
}

// call calls one tool within the call timeout; a server that ends during
// the call fails it at once, saying how it ended.
func (s *server) call(ctx context.Context, tool string, args map[string]any) (*sdk.CallToolResult, error) {
	c, err := s.connected(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := c.sess.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		got <- answer{res, err}
	}()
	select {
	case a := <-got:
		if a.err == nil {
			return a.res, nil
		}
		if err := s.tooLarge(c); err != nil {
			return nil, err
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("the MCP server %q did not answer within %s; the call was cancelled", s.cfg.Name, s.callTimeout())
		}
		var rpcErr *jsonrpc.Error
		if errors.As(a.err, &rpcErr) {
			return nil, fmt.Errorf("the MCP server %q refused the call: %w", s.cfg.Name, a.err)
		}
		// Not the server's answer: the connection failed. The SDK may say so
		// before the session or the process is seen to end: wait for that
		// (bounded), so the error says how it ended and the next call
		// starts the server again instead of using a dead connection.
		select {
		case <-c.sessDone:
		case <-c.ended:
		case <-time.After(2 * time.Second):
		}
		if c.dead() {
			if why := c.endedWhy(); why != "" {
				return nil, fmt.Errorf("the MCP server %q ended during the call: %s", s.cfg.Name, why)
			}
			return nil, fmt.Errorf("the MCP server %q closed the connection during the call (%v); it was stopped and starts again on the next call", s.cfg.Name, a.err)
		}
		return nil, fmt.Errorf("the MCP server %q: %w", s.cfg.Name, a.err)
	case <-c.ended:
		cancel()
		if err := s.tooLarge(c); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("the MCP server %q ended during the call: %s", s.cfg.Name, c.why())
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("the MCP server %q did not answer within %s; the call was cancelled", s.cfg.Name, s.callTimeout())
		}
		return nil, ctx.Err()
	}
}

// close stops the server for good.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.stop()
	}
}

// httpClient is the client of an HTTP server of cfg: its headers go with
// every request to the origin of cfg.URL, and only there; every body it
// reads is bounded (MaxMessageBytes; over notes what went over).
func httpClient(cfg ServerConfig, over *overLimit) *http.Client {
	return &http.Client{Transport: limitBodies{next: headerTransport{headers: cfg.Headers, origin: origin(cfg.URL), next: http.DefaultTransport}, max: MaxMessageBytes, over: over}}
}

// readCloser is a reader with another's Close.
type readCloser struct {
	io.Reader
	io.Closer
}

// headerTransport adds the configured headers to every request to origin
// (scheme, host and port). A redirect to another origin gets none of them:
// net/http drops Authorization on such a redirect, and a transport that
// set the headers again would send the credentials to wherever the server
// points.
type headerTransport struct {
	headers map[string]string
	origin  string
	next    http.RoundTripper
}

// origin is scheme://host:port of raw, the port made explicit; "" when raw
// does not parse.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return originOf(u)
}

func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && t.origin != "" && originOf(r.URL) == t.origin {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(r)
}
