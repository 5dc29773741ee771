"""Drive a terminal editor inside tmux, as a person would, and judge the screen.

Shared by the terminal end-to-end tests (nvim_term.py, emacs_term.py). Python
standard library only. Each Term has its own tmux server socket
(agentls-e2e-PID-NAME), so suites run in parallel.

A test fails when the screen is blocked by a prompt the user did not ask for
("Press ENTER", "-- More --", an unanswered "(y or n)"): wait_for() checks the
screen for BLOCKERS at every poll.
"""
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BLOCKERS = [
    re.compile(r"Press ENTER or type command to continue"),
    re.compile(r"-- More --"),
    re.compile(r"\(y or n\)\s*$", re.M),
]


def read_probe(path, timeout):
    """The JSON value an editor wrote to path (a probe: written to
    path + ".tmp", then renamed, so it is whole once it exists); None after
    timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                return json.load(f)
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    return None


class Blocked(Exception):
    """The screen is stopped at a prompt nobody asked for."""


class Term:
    def __init__(self, name, cmd, cwd, env=None, width=200, height=50):
        self.sock = "agentls-e2e-%d-%s" % (os.getpid(), name)
        self.name = name
        self.findings = []
        self.failed = 0
        self._renders = []
        self.t0 = time.time()
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["TERM"] = "xterm-256color"
        # tmux passes only its own server's environment: start the server
        # with ours, then the command in it.
        self._tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-c", cwd,
                   "env " + " ".join(_sh(k + "=" + v) for k, v in sorted((env or {}).items())) + " " + cmd,
                   env=full_env)

    def _tmux(self, *args, env=None, check=True):
        return subprocess.run(["tmux", "-L", self.sock] + list(args), env=env, check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout

    def send(self, *keys):
        """send-keys: tmux key names (Enter, Escape, C-g) or literal text."""
        self._tmux("send-keys", *keys)

    def type(self, text):
        self._tmux("send-keys", "-l", text)

    def screen(self, ansi=False):
        args = ["capture-pane", "-p"] + (["-e"] if ansi else [])
        return self._tmux(*args, check=False)

    def wait_for(self, pattern, timeout=15.0, allow_blockers=False, what=None):
        """Polls the screen until pattern (a regexp) shows; returns the match
        or None. Raises Blocked when a blocker shows first."""
        rx = re.compile(pattern, re.M)
        deadline = time.time() + timeout
        while True:
            s = self.screen()
            m = rx.search(s)
            if m:
                return m
            if not allow_blockers:
                for b in BLOCKERS:
                    if b.search(s):
                        raise Blocked("%s: screen blocked by %r while waiting for %r:\n%s" % (self.name, b.pattern, pattern, s))
            if time.time() > deadline:
                return None
            time.sleep(0.1)

    def wait_gone(self, pattern, timeout=5.0):
        """Polls the screen until pattern (a regexp) no longer shows; True
        when it went within timeout."""
        rx = re.compile(pattern, re.M)
        deadline = time.time() + timeout
        while rx.search(self.screen()):
            if time.time() > deadline:
                return False
            time.sleep(0.1)
        return True

    def stays(self, pattern, seconds, allow_blockers=False):
        """Asserts persistence: pattern shows at every poll for seconds (a
        deliberate hold, e.g. a question answered late on purpose, or a
        message that must not be overwritten). True when it never left."""
        rx = re.compile(pattern, re.M)
        deadline = time.time() + seconds
        while True:
            s = self.screen()
            if not rx.search(s):
                return False
            if not allow_blockers:
                for b in BLOCKERS:
                    if b.search(s):
                        raise Blocked("%s: screen blocked by %r while %r should stay:\n%s" % (self.name, b.pattern, pattern, s))
            if time.time() > deadline:
                return True
            time.sleep(0.1)

    def watch(self, seconds, forbid=()):
        """Polls for seconds; raises Blocked on a blocker or on a forbidden
        pattern."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            s = self.screen()
            for b in list(BLOCKERS) + [re.compile(f, re.M) for f in forbid]:
                if b.search(s):
                    raise Blocked("%s: %r on the screen:\n%s" % (self.name, b.pattern, s))
            time.sleep(0.1)

    def note(self, ok, what):
        self.findings.append(("PASS " if ok else "FAIL ") + "[%4.1f s] " % (time.time() - self.t0) + what)
        print(self.findings[-1], flush=True)
        if not ok:
            self.failed += 1
            # What the user saw when it failed.
            lines = [l.rstrip() for l in self.screen().splitlines()]
            print("  screen:\n" + "\n".join("  | " + l for l in lines if l.strip() and l.strip() != "~"), flush=True)
        return ok

    def pending(self, what):
        """A check of a server feature this server does not have yet: said
        loudly, not counted as a failure."""
        self.findings.append("PENDING " + what)
        print(self.findings[-1], flush=True)

    def screenshot(self, path):
        """The screen with its colours as PNG (ANSI -> HTML -> chromium),
        when AGENTLS_E2E_SHOTS is set ("docs": into docs/images).
        The screen is captured now and rendered in the background, so a
        question on the screen is answered without delay."""
        if not os.environ.get("AGENTLS_E2E_SHOTS"):
            return  # chromium costs seconds of CPU: only when asked for
        ansi = self.screen(ansi=True)
        th = threading.Thread(target=_render_serial, args=(ansi, path))
        th.start()
        self._renders.append(th)

    def close(self):
        self._tmux("kill-server", check=False)
        for th in self._renders:
            th.join()


def _sh(s):
    return "'" + s.replace("'", "'\\''") + "'"


_BASIC = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
          "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"]


def _c256(n):
    if n < 16:
        return _BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def ansi_to_html(text, fg="#d0d0d0", bg="#1c1c1c"):
    """tmux capture-pane -e output as HTML: SGR colours, bold, reverse."""
    out = []
    st = {"fg": None, "bg": None, "bold": False, "rev": False, "ul": False}

    def span_open():
        f, b = st["fg"] or fg, st["bg"] or bg
        if st["rev"]:
            f, b = b, f
        style = "color:%s;background:%s" % (f, b)
        if st["bold"]:
            style += ";font-weight:bold"
        if st["ul"]:
            style += ";text-decoration:underline"
        return '<span style="%s">' % style

    out.append(span_open())
    for part in re.split(r"(\x1b\[[0-9;:]*m)", text):
        if not part.startswith("\x1b["):
            out.append(html.escape(part))
            continue
        codes = [int(c) if c.isdigit() else 0 for c in part[2:-1].replace(":", ";").split(";")] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                st.update(fg=None, bg=None, bold=False, rev=False, ul=False)
            elif c == 1:
                st["bold"] = True
            elif c == 4:
                st["ul"] = True
            elif c == 7:
                st["rev"] = True
            elif c == 22:
                st["bold"] = False
            elif c == 24:
                st["ul"] = False
            elif c == 27:
                st["rev"] = False
            elif 30 <= c <= 37:
                st["fg"] = _BASIC[c - 30]
            elif 90 <= c <= 97:
                st["fg"] = _BASIC[c - 90 + 8]
            elif 40 <= c <= 47:
                st["bg"] = _BASIC[c - 40]
            elif 100 <= c <= 107:
                st["bg"] = _BASIC[c - 100 + 8]
            elif c == 39:
                st["fg"] = None
            elif c == 49:
                st["bg"] = None
            elif c in (38, 48) and i + 1 < len(codes):
                key = "fg" if c == 38 else "bg"
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    st[key] = _c256(codes[i + 2])
                    i += 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    st[key] = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                    i += 4
            i += 1
        out.append("</span>" + span_open())
    out.append("</span>")
    return ('<!doctype html><meta charset="utf-8"><body style="margin:0;background:%s">'
            '<style>span{padding:2px 0}</style>'
            '<pre style="margin:0;padding:6px;font:14px/18px \'DejaVu Sans Mono\',monospace;color:%s">%s</pre>'
            % (bg, fg, "".join(out)))


_render_lock = threading.Lock()


def _render_serial(ansi, path):
    with _render_lock:  # one chromium at a time: the machine has 2 cores
        render_png(ansi, path)


def render_png(ansi, path, cols=200, rows=50):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("screenshot skipped: chromium is not installed (scripts/install-code-server)", file=sys.stderr)
        return False
    d = tempfile.mkdtemp(prefix="agentls-shot-")
    try:
        page = os.path.join(d, "screen.html")
        with open(page, "w") as f:
            f.write(ansi_to_html(ansi))
        width, height = int(cols * 8.45) + 12, rows * 18 + 12
        out = os.path.abspath(path)
        if os.path.exists(out):
            os.remove(out)
        # Headless chromium writes the PNG, then can take many seconds to
        # exit: wait for the file, then end its process group.
        proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                 "--user-data-dir=" + os.path.join(d, "profile"), "--no-first-run",
                                 "--disable-background-networking", "--disable-component-update",
                                 "--window-size=%d,%d" % (width, height), "--screenshot=" + out,
                                 "file://" + page], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.time() + 90
        size = -1
        while time.time() < deadline and proc.poll() is None:
            # Written when its size stops changing between two polls.
            now = os.path.getsize(out) if os.path.exists(out) else 0
            if now > 0 and now == size:
                break
            size = now
            time.sleep(0.2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
        return os.path.exists(path)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def doc_commands(path, section_rx, cmd_rx):
    """The command names a docs section lists (for the "every documented
    command exists" check)."""
    text = open(path).read()
    m = re.search(section_rx, text, re.S)
    if not m:
        return []
    return sorted(set(re.findall(cmd_rx, m.group(0))))
