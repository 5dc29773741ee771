"""Vim 9 + ALE 3.3 in a real terminal (tmux) with the snippet of
docs/editors.md ("## Vim 9 + ALE", read from the file, not copied), against
bin/agentls + fake-model: "Ask agent about `Greet`" through :ALECodeAction
and its answer on the screen; then "Run agent on this comment" on a
"// agent: ..." comment the user writes: the scripted model's edit on disk
and in the reloaded buffer, the comment removed, the last message on the
screen; then a question in a comment: agentls's hint on it before the run,
its answer on it after (the diagnostic ALE echoes, :ALEHover).

  python3 vim_ale_term.py ROOT WORKSPACE ARTIFACTS
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from term import Blocked, Term  # noqa: E402

root, ws, art = sys.argv[1:4]
shots = os.path.join(root, "docs", "images") if os.environ.get("AGENTLS_E2E_SHOTS") == "docs" else art
doc = open(os.path.join(root, "docs", "editors.md")).read()
m = re.search(r"## Vim 9 \+ ALE.*?```vim\n(.*?)```", doc, re.S)
vimrc = os.path.join(art, "vim-ale.vimrc")
with open(vimrc, "w") as f:
    f.write("set nocompatible\nfiletype plugin indent on\nsyntax on\nset shortmess+=I\n")
    f.write(m.group(1) if m else "")
env = {"PATH": os.path.join(root, "bin") + ":" + os.environ["PATH"]}


def read(path):
    with open(path) as f:
        return f.read()


def poll(cond, timeout):
    """Polls cond until it holds (True) or timeout seconds pass (False)."""
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            return False
        time.sleep(0.1)
    return True


t = Term("vim", "vim -u %s main.go" % vimrc, ws, env=env)


def write_comment(text):
    """Types an instruction comment above Greet and saves main.go; True
    once the file on disk holds it."""
    t.send("Escape")
    t.type(":call search('^func Greet')")
    t.send("Enter")
    t.send("O")
    t.type(text)
    t.send("Escape")
    t.type(":w")
    t.send("Enter")
    return poll(lambda: text in read(os.path.join(ws, "main.go")), 10)


def comment_menu():
    """:ALECodeAction on the cursor's line: the menu entry of "Run agent on
    this comment" (its number in group 1), or None."""
    t.type(":ALECodeAction")
    t.send("Enter")
    return t.wait_for(r"(\d+)[.:)]? *Run agent on this comment", 15, allow_blockers=True)


def server_log():
    try:
        with open(os.environ["E2E_SERVER_LOG"]) as f:
            return f.read()
    except (KeyError, OSError):
        return ""


try:
    t.note(m is not None, "docs/editors.md has the Vim + ALE snippet")
    t.note(t.wait_for(r"func Greet", 10) is not None, "Vim shows main.go")
    # ALE starts the server on the first lint: wait until it initialized
    # (the server's log, E2E_SERVER_LOG from lib.sh, says so).
    deadline = time.time() + 20
    while time.time() < deadline and "msg=initialize" not in server_log():
        time.sleep(0.1)
    t.note("msg=initialize" in server_log(), "ALE started agentls and it initialized")
    t.send("Escape")
    t.type("/Greet(name")
    t.send("Enter")
    t.send("w")  # onto Greet's name... the cursor is on G already
    t.send("b")
    menu = None
    for attempt in range(2):  # a request sent while ALE still opens the file gets no menu: ask again
        t.type(":ALECodeAction")
        t.send("Enter")
        menu = t.wait_for(r"(\d+)[.:)]? *Ask agent about `Greet`", 15 if attempt else 8, allow_blockers=True)
        if menu:
            break
        t.send("Escape")
    t.note(menu is not None, ":ALECodeAction offers \"Ask agent about `Greet`\"")
    if menu:
        t.type(menu.group(1))
        t.send("Enter")
        t.note(t.wait_for(r"ALE-ANSWER", 20, allow_blockers=True) is not None,
               "the answer shows (g:ale_lsp_show_message_severity lowered)")
        t.screenshot(os.path.join(shots, "vim-ale-answer.png"))
        t.watch(0.5)  # and no "Press ENTER" under it

    # "Run agent on this comment": the user writes an instruction comment
    # above Greet, saves, and asks ALE for the code actions on it.
    main_go = os.path.join(ws, "main.go")
    t.note(write_comment("// agent: make Greet shout"), "the comment is saved in main.go")
    menu = comment_menu()
    t.note(menu is not None, ":ALECodeAction on the comment offers \"Run agent on this comment\"")
    if menu:
        t.type(menu.group(1))
        t.send("Enter")
        done = lambda: 'return "HELLO, " + name + "!"' in read(main_go) and "agent:" not in read(main_go)
        t.note(poll(done, 20), "main.go on disk has the scripted model's edit, and the comment is removed")
        shown = t.wait_for(r"the instruction comment\s+was\s+removed", 20, allow_blockers=True)
        t.note(shown is not None, "the last message says the task completed, the comment was removed and where the answer is")
        if shown:
            # The message wraps at the screen's width: read it unwrapped.
            scr = t.screen().replace("\n", "")
            t.note(re.search(r"completed in [^;]*; changed on disk: main\.go; the instruction comment was removed\. "
                             r"The whole answer: \S+/\.agentls/tasks/\S+\.md", scr) is not None,
                   "the message names the change on disk and the report")
        # The buffer reloads (autoread + checktime in the snippet): the
        # user sees the edited Greet and no instruction comment.
        t.note(t.wait_for(r'return "HELLO, " \+ name \+ "!"', 10, allow_blockers=True) is not None,
               "Vim's buffer shows the edit (reloaded from disk)")
        t.note(poll(lambda: "// agent: make Greet shout" not in t.screen(), 10),
               "the instruction comment is gone from the screen (reloaded again after its removal)")
        t.screenshot(os.path.join(shots, "vim-ale-comment.png"))
        t.watch(0.5)  # and no "Press ENTER" under it

    # A question in a comment. Before the run, the comment carries a hint
    # that names the code action (ALE echoes the diagnostic under the
    # cursor); the task changes nothing, so the comment stays and carries
    # the answer: its summary in the diagnostic, the whole answer in
    # :ALEHover.
    def echoed(pattern, timeout):
        """Moves the cursor off the line and back (ALE echoes the
        diagnostic under the cursor when it moves) until pattern shows."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            t.send("j")
            t.send("k")
            if t.wait_for(pattern, 0.5, allow_blockers=True):
                return True
        return False

    t.note(write_comment("// agent: why does Greet take a name"), "the question comment is saved in main.go")
    t.note(echoed(r"Agent instruction: the code action \"Run agent on this comment\" runs it", 15),
           "ALE shows agentls's hint on the comment: the code action that runs it")
    menu = comment_menu()
    t.note(menu is not None, ":ALECodeAction on the question offers \"Run agent on this comment\"")
    if menu:
        t.type(menu.group(1))
        t.send("Enter")
        t.note(t.wait_for(r"COMMENT-ANSWER", 20, allow_blockers=True) is not None, "the answer's summary shows as the last message")
        t.note("// agent: why does Greet take a name" in read(main_go), "the task changed nothing, so the comment stays")
        t.note(echoed(r"agentls: completed .*COMMENT-ANSWER", 15),
               "the comment's diagnostic now carries the answer (ALE echoes it on the line)")
        t.type(":ALEHover")
        t.send("Enter")
        whole = t.wait_for(r"Nothing in the code needs to change", 15, allow_blockers=True)
        t.note(whole is not None, ":ALEHover on the comment shows the whole answer")
        if whole:
            scr = t.screen().replace("\n", "")
            t.note(re.search(r"Report: \S+/\.agentls/tasks/\S+\.md", scr) is not None, "the hover names the report")
            t.screenshot(os.path.join(shots, "vim-ale-hover.png"))
        t.send("Enter")
except Blocked as e:
    t.note(False, str(e))
finally:
    with open(os.path.join(art, "vim-ale.screen.txt"), "w") as f:
        f.write(t.screen())
    t.close()
print("vim-ale: %d failed" % t.failed)
sys.exit(1 if t.failed else 0)
