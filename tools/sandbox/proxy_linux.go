package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// proxyVars are the variables that name a proxy; the command's own values
// are replaced (no other proxy is reachable from its namespace).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"}

// startBridge listens on a loopback port of the supervisor's network
// namespace (the command's only network: lo) and hands every connection
// to the proxy over ctrl, as one end of a new socket pair (SCM_RIGHTS). It
// returns the proxy URL for the command's environment.
func startBridge(ctrl *os.File) (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("proxy bridge: %w", err)
	}
	cfd := int(ctrl.Fd())
	var sendMu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				c.Close()
				continue
			}
			sendMu.Lock()
			err = unix.Sendmsg(cfd, []byte{0}, unix.UnixRights(fds[1]), nil, 0)
			sendMu.Unlock()
			unix.Close(fds[1])
			if err != nil {
				unix.Close(fds[0])
				c.Close()
				continue
			}
			f := os.NewFile(uintptr(fds[0]), "proxied")
			pc, err := net.FileConn(f)
			f.Close()
			if err != nil {
				c.Close()
				continue
			}
			go pipe(c, pc)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// pipe copies both ways between a and b until both directions end.
func pipe(a, b net.Conn) {
	defer a.Close()
	defer b.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, a)
		halfClose(b)
		close(done)
	}()
	_, _ = io.Copy(a, b)
	halfClose(a)
	<-done
}

func halfClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// withProxy is env with the proxy variables set to url (and the command's
// own ones dropped); NO_PROXY keeps the command's own local servers
// (loopback of its namespace) direct.
func withProxy(env []string, url string) []string {
	out := make([]string, 0, len(env)+len(proxyVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, v := range proxyVars {
			if name == v {
				drop = true
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	for _, v := range proxyVars {
		val := url
		if strings.EqualFold(v, "NO_PROXY") {
			val = "localhost,127.0.0.1,::1"
		}
		out = append(out, v+"="+val)
	}
	return out
}
