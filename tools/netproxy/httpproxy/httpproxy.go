// Package httpproxy reads the requests of confined programs for the
// network proxy (package netproxy): one CONNECT tunnel, or one plain HTTP
// request in absolute form, per connection, parsed by net/http.
package httpproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentls/agentls/tools/netproxy"
)

// Limits of one proxied connection.
const (
	maxHead     = 64 << 10         // bytes of a request line and headers
	headTimeout = 30 * time.Second // to read them
)

// New is netproxy.New with Serve: a proxy that lets through what allow
// allows and nothing else.
func New(allow netproxy.Allowlist, opts netproxy.Options) *netproxy.Proxy {
	return netproxy.New(allow, opts, Serve)
}

// Serve is the netproxy.ServeFunc of agentls: it proxies one client
// connection: one CONNECT tunnel, or one plain
// HTTP request (absolute-form, http only), then closes it. record gets
// the event of the request.
func Serve(ctx context.Context, p *netproxy.Proxy, client net.Conn, record func(netproxy.Event)) {
	defer client.Close()
	lr := &io.LimitedReader{R: client, N: maxHead}
	br := bufio.NewReader(lr)
	_ = client.SetReadDeadline(time.Now().Add(headTimeout))
	req, err := http.ReadRequest(br)
	if err != nil {
		writeStatus(client, http.StatusBadRequest, "agentls proxy: bad request")
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	lr.N = math.MaxInt64
	host, port, err := target(req)
	if err != nil {
		ev := netproxy.Event{Host: req.Host, Reason: err.Error()}
		p.Note(ev, record)
		writeStatus(client, http.StatusForbidden, "agentls proxy: "+err.Error())
		return
	}
	up, ev := p.Dial(ctx, host, port)
	p.Note(ev, record)
	if up == nil {
		code := http.StatusForbidden
		if ev.Addr != "" {
			code = http.StatusBadGateway
		}
		writeStatus(client, code, "agentls proxy: "+ev.Reason)
		return
	}
	defer up.Close()
	// Ending the session cuts the tunnel, whichever side is idle.
	stop := context.AfterFunc(ctx, func() { up.Close(); client.Close() })
	defer stop()
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		splice(client, br, up)
		return
	}
	// Plain HTTP: the request in origin form, one per connection.
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	req.RequestURI = ""
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(client, up)
}

// target is the host and port a request asks for. A CONNECT names
// host:port; a plain request an absolute http URL. Userinfo is refused
// (it has no place in either and hides the host from a reader).
func target(req *http.Request) (string, int, error) {
	if req.URL == nil {
		return "", 0, errors.New("no target")
	}
	if req.URL.User != nil {
		return "", 0, errors.New("a target with user information is refused")
	}
	hostport := req.URL.Host
	defPort := ""
	switch {
	case req.Method == http.MethodConnect:
		if hostport == "" {
			hostport = req.Host
		}
	case req.URL.Scheme == "http":
		defPort = "80"
	default:
		return "", 0, fmt.Errorf("only CONNECT and absolute http:// requests are proxied (got %s %s)", req.Method, req.URL.Scheme)
	}
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == "" {
			return "", 0, fmt.Errorf("CONNECT needs host:port, got %q", hostport)
		}
		host, ps = hostport, defPort
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != ps {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	return host, port, nil
}

func writeStatus(w io.Writer, code int, msg string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
}

// splice copies both ways until either side ends; what the client sent
// after its CONNECT line (buffered in br) goes first.
func splice(client net.Conn, br *bufio.Reader, up net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, br)
		closeWrite(up)
	}()
	_, _ = io.Copy(client, up)
	closeWrite(client)
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
