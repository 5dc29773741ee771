"""A user's first day in Emacs (emacs -nw in tmux), set up from the
README's own words: its Emacs snippet (read from README.md by the runner)
is ~/.emacs.d/init.el, agentls is on PATH, the user settings file holds an
MCP server and Claude Code's logging hook (docs/extending.md), and the
workspace has docs/extending.md's /review command. Four journeys, each
driven by keys as a user types them, every approval answered in the
minibuffer ("Allow once"):
  1. M-x agentls-run "Rename Greet to Welcome everywhere" with only
     main.go open: both files change; M-x agentls-undo then reverts both
     without asking again.
  2. M-x agentls-tools lists the MCP server's tool; a task calls it and
     *agentls answer* shows its result.
  3. a task runs a command: it runs, and the hook logs it in
     ~/.claude/bash-command-log.txt.
  4. M-x agentls-prompt review, main.go: the answer is shown.
Also: main.go opens in go-mode with eglot, each approval shows its choices
before any TAB, and keys typed after a task go into the buffer.

  python3 emacs_journeys_term.py ROOT WORKSPACE ARTIFACTS
Environment: AGENTLS_E2E_EMACS (the Emacs), E2E_HOOK_LOG.
"""
import glob
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emacs_keys import EmacsKeys  # noqa: E402
from term import Blocked, Term  # noqa: E402

root, ws, art = sys.argv[1:4]
probe = os.path.join(art, "emacs-journeys.probe.json")
hook_log = os.environ["E2E_HOOK_LOG"]
t = Term("emacs-journeys", "%s -nw main.go" % os.environ.get("AGENTLS_E2E_EMACS", "emacs"), ws)

PROMPTS = {"agentls-run": r"agentls task:", "agentls-undo": r"Undo task", "agentls-prompt": r"agentls command: /"}


keys = EmacsKeys(t, probe, PROMPTS)
mx = keys.mx
probe_eval = keys.probe_eval


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


END = re.compile(r"# agentls task (\S+): (completed|failed|cancelled)", re.M)


def shown_task():
    """The id of the task whose end *agentls answer* shows, or None."""
    m = END.search(t.screen())
    return m and m.group(1)


def answer_approvals(prev, timeout=150):
    """Answers each approval that shows with "Allow once" (and an edit's
    (y or n) with y) until *agentls answer* shows the end of a task other
    than prev; returns (its match: id, status), [the approval lines seen])."""
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = t.screen()
        m = END.search(s)
        if m and m.group(1) != prev:
            return m, seen
        q = re.search(r"^.*Choose \(([^)]*)\):.*$", s, re.M)
        if q:
            seen.append(q.group(0).strip())
            t.type("Allow once")
            t.send("Enter")
            t.wait_gone(re.escape(q.group(0).strip()[-60:]), 10)
            continue
        if re.search(r"\(y or n\)\s*$", s, re.M):
            seen.append(s.strip().splitlines()[-1])
            t.type("y")
            t.wait_gone(r"\(y or n\)\s*$", 10)
            continue
        time.sleep(0.1)
    return None, seen


def task(prompt, until):
    """M-x agentls-run PROMPT, approvals answered, until pattern until shows
    in *agentls answer* with the task's end."""
    prev = shown_task()
    mx("agentls-run", prompt)
    m, seen = answer_approvals(prev)
    for q in seen:
        t.note("Choose (Allow once" in q or "(y or n)" in q, "the question shows its choices before any TAB: %s" % q[-160:])
    s = t.screen()
    t.note(m is not None and m.group(2) == "completed" and re.search(until, s) is not None,
           "%s: completed, %r shown (asked %d times)" % (prompt, until, len(seen)))
    return seen


try:
    # Emacs can be frozen for a while here: eglot asks gopls for the
    # buffer's symbols (the Index menu) synchronously while gopls loads.
    t.note(t.wait_for(r"main\.go", 180) is not None, "Emacs shows main.go")
    t.note(t.wait_for(r"eglot", 180) is not None, "eglot (gopls) runs for main.go, as the README's eglot-ensure asks")
    state = probe_eval('(with-current-buffer "main.go" (list (symbol-name major-mode) (and (fboundp (quote eglot-current-server)) (eglot-current-server) t) emacs-version))', 60)
    t.note(state is not None and state[0] == "go-mode", "main.go opens in go-mode with the README's set-up: %s" % state)
    test_path = os.path.join(ws, "main_test.go")
    test_before = read(test_path)
    opened = probe_eval('(and (find-buffer-visiting %s) t)' % json.dumps(test_path))
    t.note(opened is None or opened is False, "main_test.go (the caller) is not open in Emacs")

    # 1. Rename with the declaring file open, then an explicit undo.
    task("Rename Greet to Welcome everywhere", r"RENAME-DONE")
    if "RENAME-DONE" not in t.screen():
        reports = sorted(glob.glob(os.path.join(ws, ".agentls", "tasks", "*.md")), key=os.path.getmtime)
        print("  the rename task's report:\n" + (read(reports[-1]) if reports else "(none)"), flush=True)
    buf = probe_eval('(with-current-buffer "main.go" (buffer-string))') or ""
    t.note("func Welcome(name string)" in buf and "Greet" not in buf, "rename: main.go's buffer holds the rename")
    t.note(read(test_path) == test_before.replace("got := Greet(", "got := Welcome("), "rename: main_test.go on disk holds the rename")
    mx("agentls-undo")
    t.note(t.wait_for(r"Undo task \(default \S+\)", 15, allow_blockers=True) is not None,
           "M-x agentls-undo offers the rename's task as its default")
    t.send("Enter")
    m = t.wait_for(r"agentls: undid task|\((y or n|yes or no)\)\s*$", 60, allow_blockers=True)
    # The rename's closed caller was loaded into a buffer and saved by
    # Emacs (agentls/saveDocuments, answered from a timer; the server waits
    # up to 30 s for it): nothing was written behind a modified buffer, so
    # the undo meets no "changed on disk; Discard your edits?" question.
    discard = m is not None and "yes or no" in m.group(0)
    t.note(m is not None and "undid" in m.group(0),
           "the undo the user asked for does not ask again%s" % (": " + t.screen().strip().splitlines()[-1] if m is not None and "undid" not in m.group(0) else ""))
    if discard:
        t.type("yes")
        t.send("Enter")
        m = t.wait_for(r"agentls: undid task", 60, allow_blockers=True)
    deadline = time.time() + 30
    while time.time() < deadline and read(test_path) != test_before:
        time.sleep(0.1)
    buf = probe_eval('(with-current-buffer "main.go" (buffer-string))') or ""
    reverted = m is not None and read(test_path) == test_before and "func Greet(name string)" in buf and "Welcome" not in buf
    t.note(reverted, "undo: main.go's buffer and main_test.go on disk are as before the rename")
    t.send("C-g")

    # 2. The MCP server of the user's settings file.
    mx("agentls-tools")
    t.note(t.wait_for(r"mcp__journey__echo", 60) is not None, "M-x agentls-tools lists the MCP server's tool mcp__journey__echo")
    t.send("C-x", "1")
    task("Echo JOURNEY-MCP through the MCP server", r"echo: JOURNEY-MCP")
    t.note(t.wait_for(r"MCP-DONE", 5) is not None, "mcp: *agentls answer* shows the answer with the tool's result")

    # 3. Claude Code's logging hook.
    task("Run the logged command", r"COMMAND-RAN")
    log = read(hook_log)
    t.note(log is not None and "echo journey-logged" in log, "hook: ~/.claude/bash-command-log.txt holds the command: %r" % log)

    # 4. The custom command of .agentls/commands/review.md.
    prev = shown_task()
    mx("agentls-prompt", "review", "main.go")
    m, _ = answer_approvals(prev)
    t.note(m is not None and m.group(2) == "completed" and t.wait_for(r"REVIEW-DONE", 5) is not None,
           "custom command: /review main.go answered in *agentls answer*")

    # Keys typed now go into the buffer: no prompt is left to eat them.
    probe_eval('(progn (delete-other-windows) (switch-to-buffer "main.go") (goto-char (point-max)) t)')
    t.type("// typed by the user")
    # Emacs reads the keys as they come, and the probe's C-g would drop the
    # ones still queued: wait until the screen shows the last one (or 30 s),
    # then judge what the buffer holds.
    t.wait_for(r"// typed by the user$", 30)
    buf = probe_eval('(with-current-buffer "main.go" (buffer-string))') or ""
    t.note(buf.rstrip().endswith("// typed by the user"), "keys typed after the tasks go into main.go's buffer: %r" % buf[-40:])
except Blocked as e:
    t.note(False, str(e))
finally:
    t.close()
print("%d failed" % t.failed)
sys.exit(1 if t.failed else 0)
