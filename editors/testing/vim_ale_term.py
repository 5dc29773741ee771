"""Vim 9 + ALE 3.3 in a real terminal (tmux) with the snippet of
docs/editors.md ("## Vim 9 + ALE", read from the file, not copied), against
bin/agentls + fake-model: "Ask agent about `Greet`" through :ALECodeAction
and its answer on the screen.

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
t = Term("vim", "vim -u %s main.go" % vimrc, ws, env=env)


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
except Blocked as e:
    t.note(False, str(e))
finally:
    with open(os.path.join(art, "vim-ale.screen.txt"), "w") as f:
        f.write(t.screen())
    t.close()
print("vim-ale: %d failed" % t.failed)
sys.exit(1 if t.failed else 0)
