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
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from review_steps import review_two_hunks  # noqa: E402
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
    review_two_hunks(t, 'the review float', save_screen, 'nvim-review')
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
