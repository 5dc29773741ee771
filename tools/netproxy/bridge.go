package netproxy

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Bounds of one session: connections open at once, and the lines Summary
// gives (a command that asks for thousands of hosts gets a count).
const (
	MaxConns        = 256
	MaxSummaryLines = 50
)

// Session serves the connections of one confined run: the supervisor, in
// the run's network namespace, sends each connection it accepts on its
// loopback port as one end of a new socket pair, over the unix socket
// (SCM_RIGHTS) whose other end Bridge returned. No path in the file
// system, no port on the host: only the supervisor holds the way in.
type Session struct {
	p      *Proxy
	ctrl   *net.UnixConn
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	events []Event
	conns  map[net.Conn]bool
	closed bool
}

// Bridge starts a session and returns it with the supervisor's end of its
// control socket: pass that to the supervisor (and close it here once the
// supervisor started).
func (p *Proxy) Bridge() (*Session, *os.File, error) {
	// Close-on-exec before any other goroutine can fork (SOCK_CLOEXEC is
	// Linux's; this builds everywhere).
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("proxy bridge: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "proxy-control")
	theirs := os.NewFile(uintptr(fds[1]), "proxy-bridge")
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return nil, nil, fmt.Errorf("proxy bridge: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{p: p, ctrl: fc.(*net.UnixConn), ctx: ctx, cancel: cancel, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.receive()
	return s, theirs, nil
}

// receive takes the connections the supervisor sends until it closes its
// end (or Close).
func (s *Session) receive() {
	defer s.wg.Done()
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		_, oobn, _, _, err := s.ctrl.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, fd := range fds {
				s.serveFD(fd)
			}
		}
	}
}

func (s *Session) serveFD(fd int) {
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "proxied")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.closed || len(s.conns) >= MaxConns {
		full := !s.closed
		s.mu.Unlock()
		if full {
			s.record(Event{Reason: fmt.Sprintf("more than %d connections at once", MaxConns)})
		}
		c.Close()
		return
	}
	s.conns[c] = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.p.serve(s.ctx, s.p, c, s.record)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

// maxEvents bounds the events a session keeps (the log has every one).
const maxEvents = 10000

func (s *Session) record(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) < maxEvents {
		s.events = append(s.events, ev)
	}
}

// Events are the connections asked for so far, in order.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Close ends the session: no new connection, the open ones cut. It
// returns the events.
func (s *Session) Close() []Event {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.ctrl.Close()
	s.wg.Wait()
	return s.Events()
}

// Summary is the lines a run's result shows about its network: each
// host:port once per verdict, in the order first asked, with a count when
// asked more than once.
func Summary(events []Event) []string {
	var order []string
	count := map[string]int{}
	for _, e := range events {
		l := e.String()
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	more := len(order) - MaxSummaryLines
	if more > 0 {
		order = order[:MaxSummaryLines]
	}
	out := make([]string, 0, len(order)+1)
	for _, l := range order {
		if n := count[l]; n > 1 {
			l = fmt.Sprintf("%s (%d times)", l, n)
		}
		out = append(out, "network: "+l)
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("network: and %d more hosts and verdicts (the log has them all)", more))
	}
	return out
}
