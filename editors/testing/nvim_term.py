"""Neovim 0.7+ in a real terminal (tmux) against bin/agentls + fake-model
(editors/testing/models/terminal.json), set up as README says.

  python3 nvim_term.py ROOT WORKSPACE ARTIFACTS
Fails when a prompt blocks the screen during a task, when an answer is cut
(its last line must show in the answer window), when a command the docs
name does not exist, or when a scenario's result is wrong. Screenshots:
ARTIFACTS/nvim-*.png (docs/images when AGENTLS_E2E_SHOTS=docs).
"""
import json
import re
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from term import Blocked, Term, doc_commands, read_probe  # noqa: E402

root, ws, art = sys.argv[1:4]
shots = os.path.join(root, "docs", "images") if os.environ.get("AGENTLS_E2E_SHOTS") == "docs" else art
probe = os.path.join(art, "nvim-term.probe.json")
init = os.path.join(art, "nvim-term-init.lua")
with open(init, "w") as f:
    f.write("""vim.opt.runtimepath:prepend(%s)
require('agentls').setup({ cmd = vim.json.decode(%s), settings = { approval = 'ask' } })
vim.o.laststatus = 2
-- Test probe: every progress message the editor received, in order.
_G.e2e_progress = {}
local progress_default = vim.lsp.handlers['$/progress']
vim.lsp.handlers['$/progress'] = function(err, result, ctx, config)
  if type(result) == 'table' and type(result.value) == 'table' and result.value.message then
    table.insert(_G.e2e_progress, result.value.message)
  end
  if progress_default then return progress_default(err, result, ctx, config) end
end
vim.o.statusline = [[%%<%%f %%h%%m%%r%%{luaeval("require'agentls'.statusline()")}%%=%%-14.(%%l,%%c%%V%%) %%P]]
""" % (json.dumps(root + "/editors/nvim"), json.dumps(json.dumps(json.loads(os.environ["E2E_CMD_JSON"])))))

t = Term("nvim", "nvim -u %s main.go" % init, ws)


def lua_probe(code, timeout=10):
    """Runs Lua in the editor that writes a JSON value to the probe file."""
    if os.path.exists(probe):
        os.remove(probe)
    t.send("Escape")
    code = " ".join(line.strip() for line in code.splitlines())
    t.type(":lua local f = io.open(%s, 'w'); f:write(vim.json.encode((function() %s end)())); f:close(); os.rename(%s, %s)"
           % (json.dumps(probe + ".tmp"), code, json.dumps(probe + ".tmp"), json.dumps(probe)))
    t.send("Enter")
    return read_probe(probe, timeout)


def ex(cmd):
    t.send("Escape")
    t.type(":" + cmd)
    t.send("Enter")


def buffer_text():
    return lua_probe("return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('main.go'), 0, -1, false), '\\n')") or ""


def answer_shown(pattern, timeout=15):
    """Waits until pattern shows and the task's reply shows its result
    ("# agentls task ID: completed"): the streamed answer shows the text
    before the task has ended. Returns pattern's match or None."""
    m = t.wait_for(pattern, timeout)
    if m is None or t.wait_for(r"# agentls task \S+: (completed|failed|cancelled)", timeout) is None:
        return None
    return m


def buffer_without(text, timeout=5):
    """Waits until main.go's buffer no longer holds text; True when it went."""
    deadline = time.time() + timeout
    while text in buffer_text():
        if time.time() > deadline:
            return False
        time.sleep(0.1)
    return True


def open_gate(name):
    """Lets the fake model send the rest of a turn held at gate name."""
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/gates/" + name, method="POST")
    urllib.request.urlopen(req, timeout=5).close()


def stream_step():
    """The model sends parts 1-3 and holds the rest until the screen shows
    the first parts (models/terminal.json, gate "stream"): the float shows
    them while the task runs, then the reply's float replaces it."""
    ex("AgentRun Explain the stream test")
    m = t.wait_for(r"STREAM-PART-2", 20)
    t.note(m is not None, "the answer float shows the first parts of the answer while the model still writes it")
    scr = t.screen()
    t.note(re.search(r"# agentls task \S+: writing the answer", scr) is not None and "STREAM-PART-4" not in scr,
           "the float says the answer is being written and holds only what came (not the held part 4)")
    st = lua_probe("return require'agentls'.status()") or ""
    t.note("writing the answer" in st, "the task still runs, writing the answer: %r" % st)
    t.screenshot(os.path.join(shots, "nvim-stream.png"))
    open_gate("stream")
    t.note(t.wait_for(r"STREAM-PART-6", 20) is not None and t.wait_for(r"# agentls task \S+: completed", 5) is not None,
           "the reply's answer float replaces the streamed one with the whole answer")
    t.note(re.search(r"# agentls task \S+: writing", t.screen()) is None, "nothing says it is still writing")
    t.send("q")
    t.note(t.wait_gone(r"STREAM-PART-6") and lua_probe("return #require'agentls.stream'.open()") == 0,
           "q closes the answer float and no streamed float is left behind")


def split_stream_step():
    """With view = 'split' the answer streams into a split at the bottom
    (not a float), the focus stays in main.go, and the reply's view
    replaces it in a split too (gate "stream-split")."""
    lua_probe("require'agentls'.config.view = 'split' return true")
    ex("AgentRun Explain the streaming into a split")
    t.note(t.wait_for(r"SPLIT-PART-1", 20) is not None, "view = 'split': the first part of the answer shows while the model writes")
    where = lua_probe("""for _, w in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)):match('agentls://answer%-') then
          return { relative = vim.api.nvim_win_get_config(w).relative, current = vim.fn.expand('%:t') }
        end
      end
      return {}""") or {}
    t.note(where.get("relative") == "" and where.get("current") == "main.go",
           "it streams into a split, not a float, and the focus stays in main.go: %r" % where)
    t.note("SPLIT-END" not in t.screen(), "the split holds only what came (not the held end)")
    open_gate("stream-split")
    t.note(t.wait_for(r"SPLIT-END", 20) is not None and t.wait_for(r"# agentls task \S+: completed", 5) is not None,
           "the reply's view replaces the streamed split with the whole answer")
    t.send("q")
    t.note(t.wait_gone(r"SPLIT-END") and lua_probe("return #require'agentls.stream'.open()") == 0,
           "q closes the answer split and no streamed window is left behind")
    lua_probe("require'agentls'.config.view = 'float' return true")


def server_log():
    """The server's log file (lib.sh's e2e_server sets E2E_SERVER_LOG)."""
    try:
        with open(os.environ["E2E_SERVER_LOG"]) as f:
            return f.read()
    except (KeyError, OSError):
        return ""


try:
    t.note(t.wait_for(r"main\.go", 10) is not None, "Neovim shows main.go")
    ready = lua_probe("""vim.wait(15000, function() local c = require'agentls'.client() return c ~= nil and c.server_capabilities ~= nil end, 50)
      local c = require'agentls'.client()
      return c and c.server_capabilities.executeCommandProvider.commands or {}""", 20)
    t.note(bool(ready), "agentls client initialized: %s" % ready)
    has_contract = bool(ready) and "agentls.result" in ready

    # Every command the docs name exists.
    names = doc_commands(os.path.join(root, "docs", "editors.md"), r"## Neovim.*?(?=\n## )", r":(Agent[A-Z]\w+)")
    names += doc_commands(os.path.join(root, "editors", "nvim", "doc", "agentls.txt"), r".*", r"\*:(Agent\w+)\*")
    names = sorted(set(names))
    exist = lua_probe("local o = {} for _, c in ipairs(vim.json.decode(%s)) do o[c] = vim.fn.exists(':' .. c) end return o" % json.dumps(json.dumps(names)))
    t.note(len(names) >= 8 and exist and all(v == 2 for v in exist.values()), "every command the docs name exists: %s" % exist)
    ex("help agentls")
    t.note(t.wait_for(r"agentls\.txt", 5) is not None, ":help agentls opens agentls.txt")
    ex("close")

    # 1. An ask task with a long multi-line answer: shown whole.
    ex("AgentRun What is the layout of this project?")
    m = t.wait_for(r"LAST-LINE-OF-THE-ANSWER", 20)
    t.note(m is not None, "the long answer's last line shows in the answer window (not cut)")
    t.note("Part 8:" in t.screen() and "Part 1:" in t.screen(), "the whole multi-line answer is on the screen")
    t.screenshot(os.path.join(shots, "nvim-answer.png"))
    t.send("q")
    t.note(t.wait_gone(r"LAST-LINE-OF-THE-ANSWER", 5), "q closes the answer window")

    # 1b. The answer streams into the answer float while the model writes it,
    # or into a split with view = 'split'.
    stream_step()
    split_stream_step()

    # 2. An edit task with a plan: progress float with the checklist.
    ex("AgentRun Add a header comment to main.go")
    m = t.wait_for(r"\[[>x]\] Add a package comment", 15)
    t.note(m is not None, "the progress window shows the plan checklist while the task runs")
    t.note(t.wait_for(r"\[agentls", 3) is not None, "the statusline item shows the task beside the file name")
    t.note("main.go" in t.screen().splitlines()[-2], "the statusline keeps the file name")
    t.screenshot(os.path.join(shots, "nvim-progress.png"))
    t.note(answer_shown(r"Added a package comment", 15) is not None, "the edit task's result shows")
    t.send("q")
    t.note("// Package main greets the world." in buffer_text(), "the edit is in the buffer")

    # 3. Undo the task.
    ex("AgentUndo")
    t.note(t.wait_for(r"undid task", 10) is not None, ":AgentUndo reports the undo")
    t.note(buffer_without("// Package main greets the world."), ":AgentUndo reverted the buffer")

    # 4. An approval through the picker: Esc asks again, 1 allows.
    ex("AgentRun Run the vet check")
    t.note(t.wait_for(r"git status --short", 15) is not None, "the approval shows the whole command")
    t.note(t.wait_for(r"Allow once", 2) is not None and t.wait_for(r"Deny", 1) is not None, "the picker lists the actions in full")
    t.screenshot(os.path.join(shots, "nvim-approval.png"))
    t.send("Escape")
    t.note(t.wait_for(r"Esc does not answer", 3) is not None, "Esc does not deny: the question stays")
    t.send("Enter")  # the first action, Allow once
    t.note(answer_shown(r"APPROVAL-DONE", 20) is not None, "the allowed command ran and the task finished")
    t.send("q")

    # 5. A question withdrawn: the task is cancelled while it asks.
    ex("AgentRun Check formatting of the files")
    # The progress names the command before the picker opens: wait for the
    # picker itself, as a user would, before answering it.
    t.note(t.wait_for(r"gofmt -l \.", 15) is not None and t.wait_for(r"Allow once", 5) is not None, "second approval shows")
    t.send("c")
    t.note(t.wait_for(r"cancel", 15) is not None, "the task is cancelled from the picker")
    t.note(t.wait_gone(r"Allow once", 5), "the approval picker is withdrawn when the task ends")
    q = lua_probe("return require'agentls'.open_question() == nil")
    t.note(q is True, "no question is open afterwards")

    # 6. Cancel a running task.
    ex("AgentRun slow: explain every function")
    t.note(t.wait_for(r"agentls: ", 10) is not None, "the slow task shows progress")
    ex("AgentCancel")
    t.note(t.wait_for(r"cancelled", 15) is not None, ":AgentCancel ends the task as cancelled")

    # 7. Tasks and reports.
    ex("AgentTasks")
    t.note(t.wait_for(r"# agentls tasks", 5) is not None and t.wait_for(r"cancelled", 2) is not None, ":AgentTasks lists the tasks in a window")
    t.note(t.wait_for(r"undone", 2) is not None, ":AgentTasks lists the task undone in step 3 as undone, not completed")
    t.send("q")

    # 8. Plan, then execute (contract: plan mode).
    if has_contract:
        ex("AgentPlan add a Farewell function")
        t.note(answer_shown(r"PLAN-READY", 20) is not None, ":AgentPlan shows the plan")
        t.note(t.wait_for(r"x executes the plan", 2) is not None, "the plan window offers Execute plan")
        t.screenshot(os.path.join(shots, "nvim-plan.png"))
        t.send("x")
        t.note(answer_shown(r"EXECUTED", 20) is not None, "Execute plan runs the plan")
        t.send("q")
        t.wait_gone(r"EXECUTED")  # else the report's wait sees the closing float
        ex("AgentReport")
        t.note(t.wait_for(r"EXECUTED", 10) is not None, ":AgentReport shows the last task's answer (agentls.result)")
        t.send("q")
    else:
        t.pending("plan mode / agentls.result: the server does not advertise agentls.result yet")

    # 9. An edit the editor answers late: the user has a confirm() dialog
    # open when the edit arrives; Neovim runs no LSP handler until it is
    # answered, so the server waits (no timeout) and says so.
    late_waits = server_log().count("the editor has not answered an edit yet")
    ex("AgentRun Add a reviewed mark to Greet (late apply)")
    t.wait_for(r"\[agentls", 10)  # the task runs (its statusline item) before the dialog opens
    ex('call confirm("Keep the current window layout?", "&Yes\\n&No")')
    t.note(t.wait_for(r"\[Y\]es, \(N\)o", 5, allow_blockers=True) is not None, "a confirm() dialog is open while the task runs")
    # Keep the dialog open until the server has sent the edit and waited
    # more than a second for Neovim's answer: its log says so (after the
    # model's 1.5 s delay, the diagnostics baseline it asks for first,
    # unanswered while the dialog is open, and the 1 s notice). While the
    # dialog is open Neovim runs no scheduled LSP handler.
    waited = False
    deadline = time.time() + 40
    while time.time() < deadline and not waited:
        waited = server_log().count("the editor has not answered an edit yet") > late_waits
        time.sleep(0.1)
    t.note(waited, "the server waited for Neovim to apply the edit while the dialog was open (its log says so)")
    t.note(t.wait_for(r"\[Y\]es, \(N\)o", 1, allow_blockers=True) is not None, "the dialog is still open while the server waits")
    t.type("y")
    t.note(answer_shown(r"LATE-DONE", 15) is not None, "the task completes after the edit is answered")
    t.send("q")
    t.note("// Reviewed: LATE-EDIT." in buffer_text(), "the late edit is in the buffer")
    prog = lua_probe("return _G.e2e_progress") or []
    waiting = [m for m in prog if "waiting for the editor to apply the edit to main.go" in m]
    t.note(bool(waiting), "the task's progress said it waits for the editor: %s" % (waiting[:1] or prog[-3:]))
    r = lua_probe("local r = require'agentls'.last_result() return { status = r.status, changed = r.changedFiles }")
    t.note(bool(r) and r.get("status") == "completed" and any(f.endswith("main.go") for f in (r.get("changed") or [])),
           "the task completed with main.go in its result: %s" % r)
    ex("AgentUndo")
    t.note(t.wait_for(r"undid task", 10) is not None, ":AgentUndo undoes the late-applied task")
    t.note(buffer_without("// Reviewed: LATE-EDIT."), ":AgentUndo reverted the late edit")

    # 10. Edit an open buffer, then `go test ./...`: the buffer must be
    # saved first (agentls/saveDocuments) or the test fails. The user's
    # own changes are written first: a buffer that also holds unsaved text
    # of the user is never saved by agentls.
    ex("write")
    ex("AgentRun Update Greet to end with a bang, then run the tests")
    t.note(t.wait_for(r"go test \./\.\.\.", 15) is not None and t.wait_for(r"Allow once", 5) is not None, "the go test approval shows")
    t.send("Enter")  # Allow once
    t.note(answer_shown(r"GOTEST-(OK|FAILED)", 60) is not None and "GOTEST-OK" in t.screen(),
           "go test ./... passed after the edit (its result had exit code 0)")
    t.send("q")
    st = lua_probe("local b = vim.fn.bufnr('main.go') return { modified = vim.api.nvim_buf_get_option(b, 'modified'), status = require'agentls'.last_result().status }")
    t.note(bool(st) and st["modified"] is False, "the buffer was saved by the plugin (not modified): %s" % st)
    t.note('name + "!"' in open(os.path.join(ws, "main.go")).read(), "the fix is on disk")

    # 11. A task that fails with an error longer than the screen: one line,
    # never "Press ENTER"; the whole text stays available.
    ex("AgentRun What happens on a long error?")
    t.note(t.wait_for(r"agentls: .*fail", 20) is not None, "the failure shows on the command line")
    t.watch(2)  # raises Blocked on "Press ENTER"
    t.note(t.wait_for(r"# agentls task \S+: failed", 3) is not None and t.wait_for(r"compact the history", 1) is not None,
           "the answer float shows the whole result text")
    # (the probe's Escape closes the float)
    r = lua_probe("local r = require'agentls'.last_result() return { status = r.status, text = r.answer ~= '' and r.answer or r.summary }") or {}
    t.note(r.get("status") == "failed" and "context window" in r.get("text", ""), "the task failed with the model's error: %r" % r.get("text"))
    shown = lua_probe("""local n = 0
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(w).relative ~= '' then n = n + 1 end
        end
        return { notice = require'agentls.ui'.notice_lines() ~= nil, floats = n }""") or {}
    t.note(shown.get("notice") is False and shown.get("floats") == 0,
           "one display per failure: the result float, closed, leaves no other float (%r)" % shown)
    # The same failure started elsewhere (not by the plugin: a plain
    # workspace/executeCommand): the server's showMessage is the only
    # message and the plugin's handler shows it in one line.
    lua_probe("vim.lsp.buf.execute_command({ command = 'agentls.run', arguments = { { prompt = 'What happens on a long error?' } } }) return true")
    t.note(t.wait_for(r"agentls: .*fail.*…", 20) is not None, "the server's long showMessage shows as one cut line")
    t.watch(2)
    line = [l.rstrip() for l in t.screen().splitlines() if l.startswith("agentls: ")]
    m = lua_probe("return { last = require'agentls'.last_message or '', echospace = vim.v.echospace, columns = vim.o.columns }") or {}
    t.note(len(m.get("last", "")) > m.get("columns", 0) and bool(line) and len(line[-1]) < m.get("columns", 0),
           "a message longer than the screen (%d > %d columns) is cut to one line: %r" % (len(m.get("last", "")), m.get("columns", 0), line[-1:]))
    t.watch(0.5)

    # 12. The server dies mid-task (kill -9): the progress window and the
    # statusline clear, the editor says "agentls stopped" with the signal,
    # :AgentCancel says so (no Lua traceback), :AgentResume starts a new
    # server and finishes the task.
    ex("AgentRun crash test: explain main")
    t.note(t.wait_for(r"\[agentls", 10) is not None, "the task to be killed shows in the statusline")
    # The model takes 60 s and the server reports nothing meanwhile: the
    # time on screen still moves every second, with the phase's own time.
    s1 = lua_probe("return require'agentls'.status()")
    s2 = s1
    deadline = time.time() + 5  # it ticks every second
    while time.time() < deadline and (s2 == s1 or not re.search(r"(planning|thinking) \(\d+ s\)", s2 or "")):
        time.sleep(0.2)
        s2 = lua_probe("return require'agentls'.status()")
    t.note(bool(s1) and bool(s2) and s1 != s2 and re.search(r"(planning|thinking) \(\d+ s\)", s2) is not None,
           "the statusline ticks between the server's reports and names the phase: %r then %r" % (s1, s2))
    pid = lua_probe("return require'agentls'.client().rpc.pid")
    t.note(isinstance(pid, int) and pid > 0, "the server's pid: %r" % pid)
    if isinstance(pid, int) and pid > 0:
        os.kill(pid, 9)
    m = t.wait_for(r"agentls stopped \(killed by signal 9", 10)
    t.note(m is not None, "the editor says the server stopped, with the signal")
    t.note(t.wait_for(r"AgentResume to continue", 2) is not None, "it says how to continue (:AgentResume)")
    t.screenshot(os.path.join(shots, "nvim-stopped.png"))
    st = lua_probe("return { status = require'agentls'.status(), float = require'agentls.ui'.progress_lines() or {} }") or {}
    t.note(st.get("status") == "" and not st.get("float"), "the statusline item and the progress window are cleared: %r" % st)
    t.note("[agentls" not in t.screen(), "no task shows on the screen")
    ex("AgentCancel")
    said = t.wait_for(r"agentls stopped|no task of this editor|traceback|E5108", 5)
    t.note(said is not None and "traceback" not in t.screen() and "E5108" not in t.screen(),
           ":AgentCancel after the crash says so, without a traceback")
    ex("AgentResume")
    t.note(answer_shown(r"RESUMED-DONE", 30) is not None, ":AgentResume starts a new server and the interrupted task finishes")
    t.send("q")
    st = lua_probe("return require'agentls'.status()")
    t.note(st == "", "after the resumed task the statusline is clear: %r" % st)
except Blocked as e:
    t.note(False, str(e))
finally:
    t.screenshot(os.path.join(art, "nvim-last.png"))
    with open(os.path.join(art, "nvim-term.screen.txt"), "w") as f:
        f.write(t.screen())
    t.close()
print("nvim-term: %d failed" % t.failed)
sys.exit(1 if t.failed else 0)
