"""Emacs agent-shell driving `agentls acp` (emacs -nw in tmux), as a user
sets it up: the runner (run-agent-shell-e2e) writes ~/.emacs.d/init.el from
the three source folders and docs/acp.md's agent-shell snippet, which
defines M-x agentls-shell. Every step is keys typed into the terminal; each
wait is on what the screen shows (a probe reads a buffer back afterwards),
but for agent-shell's session picker, which Emacs does not reliably draw in a
terminal (open_shell says how it is answered).

  1. M-x agentls-shell; a question (XQ) is answered in the shell.
  2. An edit (XEDIT): agent-shell shows its permission dialog with the
     diff button; `y` (its Allow key) answers it; main.go changes on disk.
  3. An image (XIMAGE ... @pixel.png, completed with TAB): agent-shell
     sends it as an image block; the scripted model answers only when the
     request carries the PNG's data URL. agentls's log names the image by
     type and size, never by its data.
  4. The terminal is closed (Emacs and its agentls end); a new Emacs, M-x
     agentls-shell: agent-shell's session picker (session/list) offers the
     session ("FOLDER TITLE DATE"); choosing it by its folder's name (TAB
     completes it) loads it (session/load), headed by its title: the replay
     shows the prompts, the image and the answers; a follow-up (XFOLLOW)
     is answered with the earlier prompts in the model's context.
  5. A command (XSLOW: sleep 37) allowed with `y`, then C-c C-c
     (agent-shell-interrupt) and `y` at its "Interrupt?": session/cancel
     reaches agentls, the prompt ends "cancelled", the sleep is gone, and
     the next question (XAFTER) is answered.
After the question (1), agent-shell's header line shows the context used
and size of agentls's last usage_update, and M-x agent-shell-show-usage its
context and cost. Last, every message agentls sent (the runner records each
process's stdin and stdout in E2E_TRACE) is validated against the v1 schema
(agent-shell/schema_check.mjs, the acpx suite's check).

  python3 agent_shell_term.py ROOT WORKSPACE ARTIFACTS
Environment: AGENTLS_E2E_EMACS (Emacs 29.1+), E2E_SERVER_LOG (agentls's log),
E2E_TRACE (agentls's traffic), E2E_NODE22 (node for the schema check).
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emacs_keys import EmacsKeys  # noqa: E402
from term import Blocked, Term  # noqa: E402

root, ws, art = sys.argv[1:4]
emacs = os.environ.get("AGENTLS_E2E_EMACS", "emacs-30.1")
server_log = os.environ["E2E_SERVER_LOG"]
trace_dir = os.environ["E2E_TRACE"]
node = os.environ["E2E_NODE22"]
probe = os.path.join(art, "agent-shell.probe.json")
main_go = os.path.join(ws, "main.go")
PNG_B64_HEAD = "iVBORw0KGgo"

# The picker's prompt (agent-shell--prompt-select-session).
PICKER = r"Start shell \(default: [^)]*\): "
# The shell's prompt, as the docs' snippet sets it ("agentls> ": the
# screen as captured has no trailing space).
PROMPT = r"^agentls>"



def ask_until_dialog(t, prompt):
    """Types prompt at the end of the shell, sends it once it shows, and
    waits for agent-shell's permission dialog; returns (its match or None,
    the screen then)."""
    t.send("M->")
    t.type(prompt)
    t.wait_for(re.escape(prompt), 15)
    t.send("Enter")
    dialog = t.wait_for(r"\[ Allow[^]]*\(y\) \]", 90)
    return dialog, t.screen()

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def agentls_pids():
    """The `agentls acp` processes working in the workspace."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
            cwd = os.readlink("/proc/%s/cwd" % d)
        except OSError:
            continue
        if len(argv) >= 2 and argv[0].endswith(b"agentls") and argv[1] == b"acp" and cwd == ws:
            out.append(int(d))
    return out


def traffic(pid, way):
    """The JSON-RPC messages agentls process pid read ("in") or sent
    ("out") so far (the recorder's copy; complete lines only)."""
    text = read(os.path.join(trace_dir, "%d.%s.jsonl" % (pid, way))) or ""
    return [json.loads(l) for l in text.split("\n")[:-1] if l.strip()]


def prompt_results(pid):
    """agentls's answers to the client's session/prompt requests, in order."""
    asked = {json.dumps(m["id"]) for m in traffic(pid, "in") if m.get("method") == "session/prompt" and "id" in m}
    return [m for m in traffic(pid, "out") if "method" not in m and json.dumps(m.get("id")) in asked]


def wait(cond, timeout):
    """cond() once it is true, polled until timeout; else its last value."""
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v or time.time() > deadline:
            return v
        time.sleep(0.1)


def running(argv):
    """Pids of the processes whose command line is argv."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")[:-1] == [a.encode() for a in argv]:
                    out.append(int(d))
            except OSError:
                pass
    return out


def compact(n):
    """A token count as agent-shell writes it (agent-shell--format-number-compact)."""
    for div, suffix in ((1e9, "b"), (1e6, "m"), (1e3, "k")):
        if n >= div:
            return "%.0f%s" % (n / div, suffix)
    return "%d" % n


def start_emacs(name):
    """emacs -nw in the workspace, once its init file (agent-shell loaded
    from source) has run: the start-up message shows only then, and a key
    sent before would quit the init file's load (EmacsKeys sends C-g)."""
    t = Term(name, "%s -nw" % emacs, ws)
    t.note(t.wait_for(r"For information about GNU Emacs", 120) is not None, "Emacs starts with the init file (agent-shell loaded)")
    keys = EmacsKeys(t, probe, {"agentls-shell": r"."})
    return t, keys


def open_shell(t, keys, pick=None):
    """M-x agentls-shell until the shell's prompt shows. agent-shell asks
    the agent for its sessions first (session/list) and offers them in its
    picker ("Start shell (default: New shell): "); pick is typed there and
    completed with TAB, or, without pick, RET takes the default (a new
    session). Returns whether the prompt showed.

    The picker is a completing-read that agent-shell calls from the
    process filter of the session/list answer; in a terminal, Emacs often
    does not redraw the screen while it is open, nor after it until a
    later key (seen: the picker never drawn, or still drawn with the shell
    ready behind it, for minutes; keys are read all along). So the picker is
    answered without waiting to see it, and C-l (redraw) is pressed while
    the prompt has not shown, as a user facing a stale screen would. Keys
    are typed once agentls has opened its store for session/list (its
    log says so), the picker's moment, into *scratch* at worst (the init
    file turns the splash screen off, whose RET would follow a link)."""
    opened = (read(server_log) or "").count("session store open")
    keys.mx("agentls-shell")
    # The agent's store opens for session/list: the picker follows.
    deadline = time.time() + 60
    while time.time() < deadline and (read(server_log) or "").count("session store open") == opened:
        time.sleep(0.1)
    m = t.wait_for(PICKER + "|" + PROMPT, 5, allow_blockers=True)
    if not (m and re.match(PROMPT, m.group(0))):
        if pick:
            t.type(pick)
            t.send("Tab")
        t.send("Enter")
    for _ in range(20):
        if t.wait_for(PROMPT, 3):
            return True
        t.send("C-l")
    return False


def ask(t, text, answer, timeout=90):
    """Types TEXT at the shell's prompt and sends it; True when ANSWER (a
    regexp) shows."""
    t.send("M->")  # the prompt is at the end of the shell buffer
    t.type(text)
    t.wait_for(re.escape(text[-20:]), 15)
    t.send("Enter")
    return t.wait_for(answer, timeout) is not None


def shell_text(keys):
    """The agent-shell buffer's text (a probe)."""
    return keys.probe_eval('(with-current-buffer (car (agent-shell-buffers)) (buffer-substring-no-properties (point-min) (point-max)))', 20) or ""


t = None
failed = 0  # of the terminals closed before t
try:
    t, keys = start_emacs("agent-shell")
    t.note(open_shell(t, keys), "M-x agentls-shell (docs/acp.md's snippet) starts agent-shell with agentls; the shell's prompt shows")

    # 1. A question, answered after a read through fs/read_text_file.
    t.note(ask(t, "XQ: What does Greet return?", r'Greet returns "Hello, " followed by the name\.'),
           "a question is answered in the agent-shell buffer")

    # Usage: the question's last model call reported 43008 tokens (the
    # script's usage); agentls sends them with the model's context size.
    pid = (agentls_pids() or [0])[0]
    wait(lambda: prompt_results(pid), 30)
    usage = [m["params"]["update"] for m in traffic(pid, "out")
             if m.get("method") == "session/update" and m["params"]["update"].get("sessionUpdate") == "usage_update"]
    last = usage[-1] if usage else {}
    used, size, cost = last.get("used", 0), last.get("size", 0), (last.get("cost") or {})
    t.note(len(usage) == 2 and used == 43008 and size == 128000 and cost.get("currency") == "USD" and cost.get("amount", 0) > 0,
           "agentls sent usage_update after each model call of the question (%d), the last: %s" % (len(usage), json.dumps(last)))
    indicator = "%s/%s (%.0f%%)" % (compact(used), compact(size), 100.0 * used / max(size, 1))
    t.note(t.wait_for("➤ " + re.escape(indicator), 15) is not None,
           "agent-shell's header line shows the context used and size of agentls's usage_update: %s" % indicator)
    context = "Context: %s/%s (%.1f%%)" % (compact(used), compact(size), 100.0 * used / max(size, 1))
    price = "Cost: %s%.2f" % (cost.get("currency", "USD"), cost.get("amount", 0))
    keys.mx("agent-shell-show-usage")
    t.note(t.wait_for(re.escape(context), 15) is not None and t.wait_for(re.escape(price), 5) is not None,
           "M-x agent-shell-show-usage shows agentls's figures: %s, %s" % (context, price))

    # 2. An edit: agent-shell's permission dialog, answered with its key.
    before = read(main_go)
    dialog, screen = ask_until_dialog(t, "XEDIT: add a package comment to main.go")
    t.note(dialog is not None and "View (v)" in screen,
           "the edit asks with agent-shell's permission dialog, with the diff to view: %s"
           % " ".join(l.strip() for l in screen.splitlines() if "(y)" in l)[:200])
    t.send("y")
    t.note(t.wait_for(r"Added a package comment to main\.go\.", 90) is not None, "after `y` the edit's task answers")
    deadline = time.time() + 30
    while time.time() < deadline and read(main_go) == before:
        time.sleep(0.1)
    after = read(main_go) or ""
    t.note(after.startswith("// Package main greets the world.\npackage main\n") and after.endswith(before.split("package main\n", 1)[1]),
           "main.go on disk has the package comment (written through fs/write_text_file)")

    # 3. An image attached as a file mention.
    t.send("M->")
    t.type("XIMAGE: what is in @pi")
    t.wait_for(r"XIMAGE: what is in @pi", 15)
    t.send("Tab")
    t.note(t.wait_for(r"XIMAGE: what is in @pixel\.png", 15) is not None, "TAB completes the mention to @pixel.png")
    t.send("Enter")
    t.note(t.wait_for(r"I see a one-pixel PNG image\.", 90) is not None,
           "the image reaches the model (it answers only when the request carries the PNG's data URL)")
    log = read(server_log) or ""
    t.note("image/png, 70 bytes" in log and PNG_B64_HEAD not in log,
           "agentls's log names the image as image/png, 70 bytes, without its data: %r"
           % [l[-160:] for l in log.splitlines() if "images" in l][:2])
    before_restart = shell_text(keys)
    with open(os.path.join(art, "agent-shell.first.txt"), "w") as f:
        f.write(before_restart)

    # 4. The terminal closed: Emacs and its agentls end.
    first = agentls_pids()
    t.close()
    failed += t.failed
    deadline = time.time() + 30
    while time.time() < deadline and any(p in agentls_pids() for p in first):
        time.sleep(0.1)
    t.note(bool(first) and not any(p in agentls_pids() for p in first), "closing the terminal ends Emacs's agentls (%s)" % first)

    t, keys = start_emacs("agent-shell-2")
    # A session's choice reads "DIRECTORY TITLE DATE": the workspace's
    # folder name completes to it (the only session there).
    ok = open_shell(t, keys, pick=os.path.basename(ws))
    t.note(ok and t.wait_for(r"I see a one-pixel PNG image\.", 60) is not None,
           "the session is loaded (session/load): the replay ends with the image prompt's answer")
    text = shell_text(keys)
    # agent-shell heads the loaded session with its title from session/list.
    t.note(re.search(r"Resuming session\s*\n\s*XQ: What does Greet return\?", text) is not None,
           "agent-shell's session picker (session/list) resumed the session, titled by its first prompt")
    with open(os.path.join(art, "agent-shell.resumed.txt"), "w") as f:
        f.write(text)
    order = [text.find(s) for s in ("XQ: What does Greet return?", "Added a package comment", "XIMAGE: what is in", "[image]", "I see a one-pixel PNG image.")]
    t.note(all(i >= 0 for i in order) and order == sorted(order),
           "the replay shows the prompts, the answers and the prompt's image ([image]) in order: %s" % order)
    t.note(ask(t, "XFOLLOW: what did I show you last?", r"You last showed me a picture\.|NO CONTEXT") and
           t.wait_for(r"You last showed me a picture\.", 5) is not None,
           "a follow-up in the resumed session has the earlier prompts in the model's context")

    # 5. Interrupt a running command the way a user does: C-c C-c.
    pid = (agentls_pids() or [0])[0]
    prompts = len(prompt_results(pid))
    dialog, screen = ask_until_dialog(t, "XSLOW: run a long command")
    t.note(dialog is not None and "sleep 37" in screen,
           "the command asks with agent-shell's permission dialog: %s"
           % " ".join(l.strip() for l in screen.splitlines() if "sleep 37" in l or "(y)" in l)[:200])
    t.send("y")
    sleeping = wait(lambda: running(["sleep", "37"]), 60)
    t.note(bool(sleeping), "after `y` the command runs (sleep 37: %s)" % sleeping)
    t.send("C-c", "C-c")
    t.note(t.wait_for(r"Interrupt\? \(y or n\)", 15) is not None, "C-c C-c (agent-shell-interrupt) asks \"Interrupt? (y or n)\"")
    start = time.time()
    t.send("y")
    ended = wait(lambda: prompt_results(pid)[prompts:], 30)
    took = time.time() - start
    cancels = [m for m in traffic(pid, "in") if m.get("method") == "session/cancel"]
    t.note(bool(cancels) and bool(ended) and ended[0].get("result", {}).get("stopReason") == "cancelled",
           "`y` sends session/cancel to agentls (%d) and the prompt ends %s in %.1f s"
           % (len(cancels), json.dumps(ended[0].get("result") if ended else None), took))
    t.note(wait(lambda: not running(["sleep", "37"]), 10), "nothing keeps running: the command's sleep 37 is gone")
    t.note(ask(t, "XAFTER: are you there?", r"Ready after the interrupt\.|the sleep ended") and
           t.wait_for(r"Ready after the interrupt\.", 5) is not None and "the sleep ended" not in t.screen(),
           "the shell answers the next question after the interrupt")
    t.close()
    failed += t.failed
    last_term, t = t, None
    gone = wait(lambda: not agentls_pids(), 30)

    # Every message agentls sent, validated against the v1 schema.
    r = subprocess.run([node, os.path.join(root, "editors/testing/agent-shell/schema_check.mjs"), trace_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    try:
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {"checked": 0, "invalid": [r.stdout[-500:] + r.stderr[-500:]]}
    ok = gone and r.returncode == 0 and res["checked"] > 30 and not res["invalid"]
    last_term.note(ok,
                   "schema: %d agentls messages (%s agentls processes) checked against %s, %d invalid%s"
                   % (res["checked"], res.get("processes"), res.get("schema"), len(res["invalid"]),
                      "" if not res["invalid"] else ": " + json.dumps(res["invalid"][:3])))
    failed += 0 if ok else 1
except Blocked as e:
    t.note(False, str(e))
finally:
    if t is not None:
        t.close()
        failed += t.failed
print("%d failed" % failed)
sys.exit(1 if failed else 0)
