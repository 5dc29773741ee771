"""Ghost text (inline completion) as a person sees it: Neovim 0.7+ or
Emacs -nw in a real terminal (tmux), against bin/agentls serve with
completion on and `agentls fake-model` answering /v1/completions
(editors/testing/models/ghost.json).

  python3 ghost_term.py nvim|emacs ROOT WORKSPACE ARTIFACTS

The user opens a line in main.go and types; the test waits (never sleeps)
for the screen to show the model's text after the cursor while the buffer
does not hold it, accepts it with the documented key (Tab), types on and
sees the next ghost text go with the next keystroke, and dismisses one
(Neovim C-], Emacs C-g). What the editor holds is read from a state file
the editor rewrites on a timer (no keystroke of the test's touches it).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from term import Blocked, Term  # noqa: E402

editor, root, ws, art = sys.argv[1:5]
state_file = os.path.join(art, "ghost-%s.state.json" % editor)
cmd_json = os.environ["E2E_CMD_JSON"]
if os.path.exists(state_file):
    os.remove(state_file)

if editor == "nvim":
    init = os.path.join(art, "ghost-nvim-init.lua")
    with open(init, "w") as f:
        f.write("""vim.opt.runtimepath:prepend(%s)
require('agentls').setup({ cmd = vim.json.decode(%s), settings = { completion = { enabled = true, model = "e2e-fim" } } })
vim.o.laststatus = 2
-- Test probe: what the buffer holds and what ghost text shows, rewritten
-- every 50 ms (written whole, then renamed).
local state_file = %s
local t = vim.loop.new_timer()
t:start(50, 50, vim.schedule_wrap(function()
  local b = vim.fn.bufnr('main.go')
  if b < 0 then return end
  local c = require('agentls').client(b)
  local caps = c and c.server_capabilities
  local g = require('agentls.ghost').current()
  local s = { ready = caps ~= nil, inline = caps ~= nil and caps.inlineCompletionProvider ~= nil,
    text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n'),
    ghost = g and g.text or vim.NIL, mode = vim.api.nvim_get_mode().mode }
  local f = io.open(state_file .. '.tmp', 'w')
  f:write(vim.json.encode(s))
  f:close()
  os.rename(state_file .. '.tmp', state_file)
end))
""" % (json.dumps(root + "/editors/nvim"), json.dumps(cmd_json), json.dumps(state_file)))
    t = Term("ghost-nvim", "nvim -n -u %s main.go" % init, ws)
    keys = {"accept": "Tab", "dismiss": "C-]"}
else:
    init = os.path.join(art, "ghost-emacs-init.el")
    with open(init, "w") as f:
        f.write("""(load %s)
(setq agentls-program (append (json-parse-string %s) nil)
      agentls-initialization-options '(:completion (:enabled t :model "e2e-fim"))
      inhibit-startup-screen t)
(add-hook 'find-file-hook (lambda () (when (string-suffix-p ".go" buffer-file-name) (agentls-ghost-mode 1))))
;; Test probe: what main.go holds and what ghost text shows, rewritten every
;; 50 ms (written whole, then renamed).
(run-with-timer 0.05 0.05
  (lambda ()
    (let ((b (get-buffer "main.go")))
      (when b
        (with-current-buffer b
          (let* ((g agentls--ghost)
                 (item (and g (nth (plist-get g :index) (plist-get g :items))))
                 (conn agentls--conn)
                 (json (json-encode
                        (list :ready (if (and conn (agentls--capabilities-of conn)) t :json-false)
                              :inline (if (and conn (agentls--ghost-supported-p conn)) t :json-false)
                              :text (buffer-substring-no-properties (point-min) (point-max))
                              :ghost (and item (plist-get item :text))))))
            (with-temp-file (concat %s ".tmp") (insert json))
            (rename-file (concat %s ".tmp") %s t)))))))
""" % (json.dumps(root + "/editors/emacs/agentls.el"), json.dumps(cmd_json),
            json.dumps(state_file), json.dumps(state_file), json.dumps(state_file)))
    t = Term("ghost-emacs", "%s -nw -Q -l %s main.go" % (os.environ.get("AGENTLS_E2E_EMACS", "emacs"), init), ws)
    keys = {"accept": "Tab", "dismiss": "C-g"}


def state():
    try:
        with open(state_file) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return {}


def wait_state(pred, timeout=20):
    """The editor's state once pred holds on it; None after timeout."""
    deadline = time.time() + timeout
    while True:
        s = state()
        if s and pred(s):
            return s
        if time.time() > deadline:
            return None
        time.sleep(0.05)


def line_of(s, marker):
    for line in s.get("text", "").split("\n"):
        if marker in line:
            return line
    return None


try:
    s = wait_state(lambda s: s.get("ready"), 30)
    if not t.note(s is not None, "the editor started agentls and it answered initialize"):
        raise SystemExit(1)
    if not t.note(s.get("inline") is True, "the server advertises inlineCompletionProvider with completion.enabled set by the editor"):
        raise SystemExit(1)

    # A new line after fmt.Println(...) in main, then typing.
    if editor == "nvim":
        t.send("Escape")
        t.type(":11")
        t.send("Enter")
        t.type("o")
    else:
        t.send("M-g", "g")
        t.type("11")
        t.send("Enter")
        t.send("C-e", "Enter")
    t.type("// ghost one:")
    m = t.wait_for(r'// ghost one: GHOST-ACCEPTED', 20)
    s = state()
    t.note(m is not None and "GHOST-ACCEPTED" not in s.get("text", ""),
           "ghost text shows the model's completion after the cursor once the user pauses, and the buffer does not hold it")
    t.screenshot(os.path.join(art, "ghost-%s-shown.png" % editor))

    t.send(keys["accept"])
    s = wait_state(lambda s: "GHOST-ACCEPTED" in s.get("text", ""), 10)
    t.note(s is not None and (line_of(s, "ghost one:") or "").strip() == '// ghost one: GHOST-ACCEPTED',
           "%s accepts it: the buffer holds the text (%r)" % (keys["accept"], s and line_of(s, "ghost one:")))

    t.type(" // ghost two:")
    m = t.wait_for(r"// ghost two: GHOST-TWO", 20)
    s = state()
    t.note(m is not None and "GHOST-TWO" not in s.get("text", ""), "typing on shows the next ghost text, not in the buffer")
    t.type("x")
    gone = t.wait_gone(r"GHOST-TWO", 10)
    s = wait_state(lambda s: "// ghost two:x" in s.get("text", ""), 10) or {}
    t.note(gone and "GHOST-TWO" not in s.get("text", "") and "// ghost two:x" in s.get("text", ""),
           "the next keystroke removes it: the key typed is in the buffer, the ghost text neither on the screen nor in the buffer")

    t.type(" // ghost three:")
    m = t.wait_for(r"// ghost three: GHOST-THREE", 20)
    t.note(m is not None, "the third ghost text shows")
    t.send(keys["dismiss"])
    gone = t.wait_gone(r"GHOST-THREE", 10)
    s = wait_state(lambda s: not s.get("ghost"), 10) or {}
    t.note(gone and "GHOST-THREE" not in s.get("text", "") and (line_of(s, "ghost three:") or "").endswith("ghost three:"),
           "%s dismisses it and leaves the buffer as typed" % keys["dismiss"])
    if editor == "nvim":
        # Tab where no ghost text shows is Tab (the mapping falls through).
        t.type("a")
        t.send("Tab")
        s = wait_state(lambda s: (line_of(s, "ghost three:") or "").endswith("\t"), 10)
        t.note(s is not None, "Tab with no ghost text shown inserts a Tab")
except Blocked as e:
    t.note(False, str(e))
finally:
    print("ghost %s: %d failed" % (editor, t.failed), flush=True)
    t.close()
sys.exit(1 if t.failed else 0)
