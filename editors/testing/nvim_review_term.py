"""Review before apply in Neovim 0.7+ in a real terminal (tmux), against
bin/agentls (review = 'always' in the user's settings) + fake-model
(editors/testing/models/review.json), set up as the README says.

  python3 nvim_review_term.py ROOT WORKSPACE ARTIFACTS
The model edits main.go in two hunks; the test accepts the first and
rejects the second in the review float by keystrokes, then checks that
the buffer holds only the accepted hunk and that the model's next request
carried the rejected one (the fake model answers REJECTION-REACHED-MODEL
only when the last tool result names it). Screens: ARTIFACTS/nvim-review*.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from term import Blocked, Term  # noqa: E402

root, ws, art = sys.argv[1:4]
# The review's screenshot also goes to docs/images with AGENTLS_E2E_SHOTS=docs.
shots = os.path.join(root, "docs", "images") if os.environ.get("AGENTLS_E2E_SHOTS") == "docs" else art
probe = os.path.join(art, "nvim-review.probe.json")
init = os.path.join(art, "nvim-review-init.lua")
with open(init, "w") as f:
    f.write("""vim.opt.runtimepath:prepend(%s)
require('agentls').setup({ cmd = vim.json.decode(%s), settings = { approval = 'ask', review = 'always' } })
vim.o.laststatus = 2
""" % (json.dumps(root + "/editors/nvim"), json.dumps(json.dumps(json.loads(os.environ["E2E_CMD_JSON"])))))

t = Term("nvim-review", "nvim -u %s main.go" % init, ws)


def lua_probe(code, timeout=10):
    """Runs Lua in the editor that writes a JSON value to the probe file."""
    if os.path.exists(probe):
        os.remove(probe)
    t.send("Escape")
    code = " ".join(line.strip() for line in code.splitlines())
    t.type(":lua local f = io.open(%s, 'w'); f:write(vim.json.encode((function() %s end)())); f:close()" % (json.dumps(probe), code))
    t.send("Enter")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(probe) and os.path.getsize(probe) > 0:
            time.sleep(0.05)
            return json.load(open(probe))
        time.sleep(0.05)
    return None


def save_screen(name, docs=False):
    t.screenshot(os.path.join(shots if docs else art, name + ".png"))
    with open(os.path.join(art, name + ".txt"), "w") as f:
        f.write(t.screen())


try:
    t.note(t.wait_for(r"main\.go", 10) is not None, "Neovim shows main.go")
    ready = lua_probe("""vim.wait(15000, function() local c = require'agentls'.client() return c ~= nil and c.server_capabilities ~= nil end, 50)
      return require'agentls'.client() ~= nil""", 20)
    t.note(ready is True, "agentls client initialized")

    t.send("Escape")
    t.type(":AgentRun Review two hunks in main.go")
    t.send("Enter")
    # The review float: both hunks, their old and new lines, the keys.
    m = t.wait_for(r"REVIEW-REJECTED", 30)
    t.note(m is not None and t.wait_for(r"a accept", 2) is not None and t.wait_for(r"R reject all", 1) is not None,
           "the review float shows the hunks and the keys")
    s = t.screen()
    t.note("-// Greet returns a greeting for name." in s and "+// Greet returns a greeting for name. REVIEW-KEPT" in s,
           "hunk 1 shows its old and new line")
    t.note(re.search(r'-\s+fmt\.Println\(Greet\("world"\)\)', s) is not None and re.search(r'\+\s+fmt\.Println\(Greet\("REVIEW-REJECTED"\)\)', s) is not None,
           "hunk 2 shows its old and new line")
    t.note("1/2 main.go:5" in s and "2/2 main.go:11" in s, "each hunk names the file and line: %s" % [l for l in s.splitlines() if "/2 main.go" in l])
    save_screen("nvim-review", docs=True)
    # Accept the first hunk, reject the second.
    t.type("a")
    t.note(t.wait_for(r"\[\+\] accept 1/2", 5) is not None, "a marks hunk 1 accepted and moves on")
    save_screen("nvim-review-after-a")
    t.type("r")
    # The answer streams in before the task ends: wait for its result too.
    t.note(t.wait_for(r"REJECTION-(REACHED-MODEL|MISSING)", 30) is not None
           and t.wait_for(r"# agentls task \S+: (completed|failed|cancelled)", 30) is not None, "the task ends after the review")
    t.note("REJECTION-REACHED-MODEL" in t.screen(), "the model's next request carried the rejected hunk (its answer says so)")
    save_screen("nvim-review-answer")
    t.send("q")
    text = lua_probe("return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('main.go'), 0, -1, false), '\\n')") or ""
    t.note("REVIEW-KEPT" in text, "the accepted hunk is in the buffer")
    t.note("REVIEW-REJECTED" not in text and 'Greet("world")' in text, "the rejected hunk is not: %r" % text)
    r = lua_probe("local r = require'agentls'.last_result() return { status = r.status, answer = r.answer }") or {}
    t.note("REJECTION-REACHED-MODEL" in (r.get("answer") or ""), "the task's answer: %r" % r)
    log = open(os.path.join(art, "nvim-review.fake-model.log")).read()
    t.note('name="review 2: the rejected hunk reached the model' in log, "the fake model served the turn that matched the rejected hunk in the tool result")
except Blocked as e:
    t.note(False, str(e))
finally:
    save_screen("nvim-review-last")
    t.close()
print("nvim-review: %d failed" % t.failed)
sys.exit(1 if t.failed else 0)
