-- Headless end-to-end test of the agentls Neovim plugin.
--
--   timeout 60 nvim --headless --clean -u NONE \
--     --cmd 'set rtp^=editors/nvim' -S editors/nvim/test/e2e.lua WORKSPACE/main.go
--
-- Environment:
--   AGENTLS_E2E_CMD       JSON array: the server command (required)
--   AGENTLS_E2E_FINDINGS  file the findings are written to (required)
--   AGENTLS_E2E_SCENARIOS comma list of: attach,run,codeaction,ask,cancel,tasks,prompts,twotasks,orphan
--                         (default: all); "init" alone: only start + initialize
--   AGENTLS_E2E_EDIT_PROMPT / ASK_SYMBOL / SLOW_PROMPT: override the prompts
--   AGENTLS_E2E_EXPECT_EDIT  a text the edited buffer must show
-- Besides the findings, FINDINGS minus .txt plus .notify.txt gets every
-- vim.notify message with its time: what the user saw.
-- Verdict: exit code 0 when every scenario passed (cquit N otherwise).
local findings_file = os.getenv('AGENTLS_E2E_FINDINGS') or '/tmp/agentls-nvim-findings.txt'
local findings = {}
local failed = 0
local function note(ok, what)
  table.insert(findings, (ok and 'PASS ' or 'FAIL ') .. what)
  if not ok then failed = failed + 1 end
  return ok
end
local function finish()
  table.insert(findings, string.format('nvim %s; %d failed', tostring(vim.version and vim.version().minor and ('0.' .. vim.version().minor .. '.' .. vim.version().patch) or '?'), failed))
  local f = io.open(findings_file, 'w')
  f:write(table.concat(findings, '\n') .. '\n')
  f:close()
  vim.cmd('cquit ' .. (failed > 0 and 1 or 0))
end

local ok_main, err_main = xpcall(function()
  local scen = os.getenv('AGENTLS_E2E_SCENARIOS') or 'attach,run,codeaction,ask,cancel,tasks,prompts,twotasks,orphan'
  local want = {}
  for s in scen:gmatch('[^,]+') do want[s] = true end

  -- Capture vim.notify so the test sees what the user sees.
  local notes = {}
  local transcript = io.open(findings_file:gsub('%.txt$', '') .. '.notify.txt', 'w')
  local t_start = vim.loop.hrtime()
  vim.notify = function(msg, level)
    table.insert(notes, { msg = tostring(msg), level = level })
    if transcript then
      local lv = ({ [vim.log.levels.WARN] = 'WARN', [vim.log.levels.ERROR] = 'ERROR' })[level] or 'INFO'
      transcript:write(string.format('[%6.0f ms] %-5s %s\n', (vim.loop.hrtime() - t_start) / 1e6, lv, tostring(msg):gsub('\n', '\n                   ')))
      transcript:flush()
    end
  end
  -- Record workspace/applyEdit requests: the edit must reach the buffer
  -- through them (not a disk write the editor never sees).
  local apply_edits = {}
  local default_apply = vim.lsp.handlers['workspace/applyEdit']
  vim.lsp.handlers['workspace/applyEdit'] = function(err, result, ctx, config)
    table.insert(apply_edits, result)
    return default_apply(err, result, ctx, config)
  end
  local function notes_matching(pat, from)
    local out = {}
    for i = from or 1, #notes do
      if notes[i].msg:find(pat) then table.insert(out, notes[i].msg) end
    end
    return out
  end

  -- 1. The plugin's commands exist with -u NONE plus runtimepath.
  vim.cmd('runtime plugin/agentls.lua')
  for _, c in ipairs({ 'AgentRun', 'AgentAsk', 'AgentPlan', 'AgentExecute', 'AgentCancel', 'AgentTasks', 'AgentReport', 'AgentUndo', 'AgentResume' }) do
    note(vim.fn.exists(':' .. c) == 2, 'command :' .. c .. ' exists')
  end

  -- :help agentls resolves (tags built in a scratch copy of doc/).
  do
    local src = vim.api.nvim_get_runtime_file('doc/agentls.txt', false)[1]
    local tmp = vim.fn.tempname()
    vim.fn.mkdir(tmp .. '/doc', 'p')
    vim.fn.writefile(vim.fn.readfile(src), tmp .. '/doc/agentls.txt')
    vim.cmd('helptags ' .. tmp .. '/doc')
    vim.opt.runtimepath:append(tmp)
    local ok = pcall(vim.cmd, 'help :AgentRun')
    note(ok and vim.fn.expand('%:t') == 'agentls.txt', ':help :AgentRun opens agentls.txt')
    if ok then vim.cmd('close') end
  end

  local cmd_json = os.getenv('AGENTLS_E2E_CMD')
  assert(cmd_json, 'AGENTLS_E2E_CMD is required')
  local cmd = vim.json.decode(cmd_json)
  local agentls = require('agentls')
  agentls.setup({ cmd = cmd, show_answer = false, settings = { model = 'e2e-model', approval = 'auto', allowCommands = { 'go test' },
    -- A hook that matches no tool: :AgentTools must list it (prompts scenario).
    hooks = { PreToolUse = { { matcher = 'no_such_tool', hooks = { { type = 'command', command = 'true', timeout = 5 } } } } } } })
  local bufnr = vim.api.nvim_get_current_buf()
  note(vim.api.nvim_buf_get_name(bufnr):match('main%.go$') ~= nil, 'fixture main.go is the current buffer')
  agentls.attach(bufnr)

  -- 2. The client attaches and initializes (the server answered initialize).
  local client
  local inited = vim.wait(20000, function()
    client = agentls.client(bufnr)
    return client ~= nil and client.server_capabilities ~= nil and client.initialized ~= false
  end, 50)
  if not note(inited, 'client started, server answered initialize') then return end
  note(vim.lsp.buf_is_attached(bufnr, client.id), 'buffer attached to the agentls client')
  if want.init and not (want.attach or want.run) then return end
  local ecp = client.server_capabilities.executeCommandProvider
  if not note(ecp ~= nil, 'executeCommandProvider advertised') then return end
  local cmds = ecp.commands or {}
  for _, c in ipairs({ 'agentls.run', 'agentls.cancel', 'agentls.tasks', 'agentls.showReport' }) do
    note(vim.tbl_contains(cmds, c), 'server advertises ' .. c)
  end
  if want.attach and not want.run then return end

  local function wait_result(token_before)
    local got
    vim.wait(30000, function()
      local r = agentls.last_result()
      if r and r ~= token_before then got = r return true end
      return false
    end, 20)
    return got
  end

  -- 3. :AgentRun an edit task: progress with the plan checklist, the edit
  -- applied through workspace/applyEdit, undo restores the text.
  if want.run then
    local before = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    local n0 = #notes
    local seen_status = ''
    local seen_plan = ''
    local prev = agentls.last_result()
    vim.cmd('AgentRun ' .. (os.getenv('AGENTLS_E2E_EDIT_PROMPT') or 'Add a header comment to main.go'))
    vim.wait(30000, function()
      local s = agentls.status()
      if s ~= '' then seen_status = s end
      local pl = table.concat(agentls.progress_lines(), ' | ')
      if pl:find('%[[x>]%]') then seen_plan = pl end
      local r = agentls.last_result()
      return r ~= nil and r ~= prev
    end, 5)
    local r = agentls.last_result()
    note(r ~= nil and r ~= prev and r.status == 'completed', 'edit task completed (status ' .. tostring(r and r.status) .. ')')
    note(seen_plan ~= '', 'the progress window carries the plan checklist ([x]/[>] lines): ' .. seen_plan)
    local multi = 0
    for i = n0 + 1, #notes do if notes[i].msg:find('\n') then multi = multi + 1 end end
    note(multi == 0, string.format('no multi-line vim.notify (%d)', multi))
    note(seen_status:match('^agentls') ~= nil, 'statusline function showed progress while running: ' .. seen_status)
    note(agentls.status() == '', 'statusline empty after the end')
    local after = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    local expect = os.getenv('AGENTLS_E2E_EXPECT_EDIT')
    note(after ~= before and (not expect or after:find(expect, 1, true) ~= nil),
      'edit applied to the buffer' .. (expect and (' (shows "' .. expect .. '")') or ''))
    note(#apply_edits > 0, string.format('the edit came as workspace/applyEdit (%d request(s), label %s)', #apply_edits, tostring(apply_edits[1] and apply_edits[1].label)))
    local disk = table.concat(vim.fn.readfile(vim.api.nvim_buf_get_name(bufnr)), '\n')
    note(disk == before, 'the file on disk is untouched (the change is in the buffer, unsaved)')
    note(r and type(r.changedFiles) == 'table' and #r.changedFiles > 0, 'result lists changed files')
    note(#notes_matching('^agentls: ', n0 + 1) > 0, 'result shown with vim.notify')
    vim.cmd('silent! undo')
    local undone = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    note(undone == before, 'one undo restores the text')
  end

  -- 4. The "Ask agent about" code action through vim.lsp.buf.code_action().
  if want.codeaction then
    local sym = os.getenv('AGENTLS_E2E_ASK_SYMBOL') or 'Greet'
    local row = vim.fn.search('func ' .. sym, 'w')
    vim.api.nvim_win_set_cursor(0, { row, 5 + 1 })
    local titles = {}
    local orig_select = vim.ui.select
    vim.ui.select = function(items, opts, on_choice)
      local pick
      for _, it in ipairs(items) do
        local title = opts.format_item and opts.format_item(it) or tostring(it)
        table.insert(titles, title)
        if not pick and title:find('Ask agent about', 1, true) then pick = it end
      end
      on_choice(pick)
    end
    local prev = agentls.last_result()
    vim.lsp.buf.code_action()
    local r = wait_result(prev)
    vim.ui.select = orig_select
    local wanted = 'Ask agent about `' .. sym .. '`'
    note(vim.tbl_contains(titles, wanted), 'code action menu offers "' .. wanted .. '" (got: ' .. table.concat(titles, '; ') .. ')')
    note(r ~= nil and r.status == 'completed', 'code action task completed')
    local ans = r and ((r.answer ~= vim.NIL and r.answer) or '') or ''
    note(ans ~= '', 'code action got an answer: ' .. ans:sub(1, 80))
  end

  -- 4b. :AgentAsk on the symbol under the cursor sends mode "ask" and its range.
  if want.ask then
    local sym = os.getenv('AGENTLS_E2E_ASK_SYMBOL') or 'Greet'
    local row = vim.fn.search('func ' .. sym, 'w')
    vim.api.nvim_win_set_cursor(0, { row, 5 + 2 })
    local prev = agentls.last_result()
    vim.cmd('AgentAsk')
    local r = wait_result(prev)
    note(r ~= nil and r.status == 'completed', ':AgentAsk on `' .. sym .. '` completed')
  end

  -- 5. Cancel a running task: it ends "cancelled".
  if want.cancel then
    local prev = agentls.last_result()
    local n0 = #notes
    vim.cmd('AgentRun ' .. (os.getenv('AGENTLS_E2E_SLOW_PROMPT') or 'slow: explain every function in this file'))
    local began = vim.wait(15000, function() return agentls.status() ~= '' end, 10)
    note(began, 'slow task shows progress before the cancel')
    local t0 = vim.loop.hrtime()
    vim.cmd('AgentCancel')
    local r = wait_result(prev)
    local ms = (vim.loop.hrtime() - t0) / 1e6
    note(r ~= nil and r.status == 'cancelled', string.format('cancelled task ends "cancelled" (%s, %.0f ms after :AgentCancel)', tostring(r and r.status), ms))
    note(#notes_matching('cancelled', n0 + 1) > 0, 'the user is told it was cancelled')
  end

  -- 6. :AgentTasks lists the tasks (in a float).
  if want.tasks then
    local win0 = vim.api.nvim_get_current_win()
    vim.cmd('AgentTasks')
    vim.wait(5000, function() return vim.api.nvim_get_current_win() ~= win0 end, 10)
    local listed = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    if vim.api.nvim_get_current_win() ~= win0 then vim.cmd('close') end
    local r = agentls.last_result()
    note(r ~= nil and listed:find(r.taskId, 1, true) ~= nil, ':AgentTasks lists the last task: ' .. listed:gsub('\n', ' | '))
    note(listed:find('completed%s+2/2') ~= nil,
      ':AgentTasks shows the edit task\'s plan progress (completed 2/2)')
  end

  -- 7. The handlers of the server's requests agentls/saveDocuments and
  -- agentls/diagnostics (called as vim.lsp calls them).
  if want.handlers or want.tasks then
    local h = agentls._handlers()
    local uri = vim.uri_from_bufnr(bufnr)
    vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { '// unsaved line' })
    local r = h['agentls/saveDocuments'](nil, { uris = { uri, 'file:///nonexistent/x.go' } }, { client_id = client.id })
    local disk = table.concat(vim.fn.readfile(vim.api.nvim_buf_get_name(bufnr)), '\n')
    note(#r.saved == 2 and #r.failed == 0 and disk:find('// unsaved line', 1, true) ~= nil
      and not vim.api.nvim_buf_get_option(bufnr, 'modified'),
      'agentls/saveDocuments wrote the modified buffer (an unloaded one counts as saved): ' .. vim.json.encode(r))
    local ns = vim.api.nvim_create_namespace('e2e-other-server')
    vim.diagnostic.set(ns, bufnr, { { lnum = 5, col = 2, end_lnum = 5, end_col = 7, severity = vim.diagnostic.severity.WARN,
      message = 'unused thing', source = 'e2e', code = 'U1' } })
    local d = h['agentls/diagnostics'](nil, { uris = { uri } }, { client_id = client.id })
    local got = d[1] and d[1].diagnostics[1]
    note(d[1] and d[1].uri == uri and got and got.range.start.line == 5 and got.range.start.character == 2
      and got.range['end'].character == 7 and got.severity == 2 and got.message == 'unused thing' and got.code == 'U1',
      'agentls/diagnostics answers vim.diagnostic in LSP shape: ' .. vim.json.encode(d))
    local all = h['agentls/diagnostics'](nil, { uris = {} }, { client_id = client.id })
    note(#all == 1 and all[1].uri == uri, 'agentls/diagnostics with no uris lists every buffer that has some')
  end

  -- 8. Custom commands: a prompt file of .agentls/commands is listed by
  -- agentls.prompts, picked in :AgentPrompt (vim.ui.select, then
  -- vim.ui.input for its argument), and its prompt with $ARGUMENTS
  -- replaced reaches the model; :AgentTools lists the model's tools.
  if want.prompts then
    local dir = vim.fn.getcwd() .. '/.agentls/commands'
    vim.fn.mkdir(dir, 'p')
    vim.fn.writefile({ '---', 'description: Greet someone', 'argument-hint: <name>', 'mode: ask', '---',
      'Greet $ARGUMENTS from the e2e prompt file.' }, dir .. '/greet.md')
    local ext = require('agentls.extend')
    local list
    ext.prompts(function(_, l) list = l end)
    vim.wait(5000, function() return list ~= nil end, 10)
    local greet
    for _, p in ipairs(list or {}) do if p.name == 'greet' then greet = p end end
    note(greet ~= nil and greet.description == 'Greet someone' and greet.argumentHint == '<name>',
      'agentls.prompts lists the prompt file: ' .. vim.json.encode(list or {}))
    local orig_select, orig_input = vim.ui.select, vim.ui.input
    local label, asked
    vim.ui.select = function(items, opts, on_choice)
      for _, it in ipairs(items) do
        if it.name == 'greet' then label = opts.format_item(it) return on_choice(it) end
      end
      on_choice(nil)
    end
    vim.ui.input = function(opts, on_confirm) asked = opts.prompt on_confirm('Ada') end
    local prev = agentls.last_result()
    vim.cmd('AgentPrompt')
    local r = wait_result(prev)
    vim.ui.select, vim.ui.input = orig_select, orig_input
    note(label ~= nil and label:find('/greet <name>', 1, true) ~= nil, 'the picker shows /greet with its hint: ' .. tostring(label))
    note(asked ~= nil and asked:find('<name>', 1, true) ~= nil, 'the picker asks for the argument: ' .. tostring(asked))
    note(r ~= nil and r.status == 'completed' and tostring(r.answer):find('Hello, Ada', 1, true) ~= nil and r.mode == 'ask',
      'the custom command reached the model with its argument (answer: ' .. tostring(r and r.answer) .. ')')
    local tools
    ext.tools(function(_, l) tools = l end)
    vim.wait(5000, function() return tools ~= nil end, 10)
    local names = {}
    for _, t in ipairs((tools and tools.tools) or {}) do table.insert(names, t.name .. '=' .. t.source) end
    note(vim.tbl_contains(names, 'read_file=built-in') and vim.tbl_contains(names, 'run_command=built-in'),
      ':AgentTools lists the model\'s tools with their source: ' .. table.concat(names, ' '))
    local shown = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    note(shown:find('# Hooks', 1, true) ~= nil, ':AgentTools shows the tools and hooks in a window')
    local hk = (tools and tools.hooks and tools.hooks[1]) or {}
    note(hk.event == 'PreToolUse' and hk.matcher == 'no_such_tool' and hk.command == 'true' and hk.timeout == '5s',
      'the hooks setting reaches the server from setup() and :AgentTools lists it: ' .. vim.json.encode(tools and tools.hooks or {}))
    pcall(vim.cmd, 'close')
  end

  -- 9. One truth across tasks: task A's edit stays unsaved in
  -- the buffer; task B runs `go test ./...`, which passes only when A's
  -- edit is on disk. The buffer holds only agent edits, so the server has
  -- the plugin save it (agentls/saveDocuments) before the command. Task C
  -- runs a command while the buffer holds the user's unsaved line.
  if want.twotasks then
    local name = vim.api.nvim_buf_get_name(bufnr)
    vim.cmd('silent! write') -- start clean: no unsaved text of the user's
    local prev = agentls.last_result()
    vim.cmd('AgentRun TWO-TASKS-A: make the greeting end with a bang')
    local r = wait_result(prev)
    note(r ~= nil and r.status == 'completed', 'task A completed (' .. tostring(r and r.status) .. ')')
    local buf = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    local disk = table.concat(vim.fn.readfile(name), '\n')
    note(buf:find('name + "!"', 1, true) ~= nil and disk:find('name + "!"', 1, true) == nil
      and vim.api.nvim_buf_get_option(bufnr, 'modified'),
      'task A left its edit unsaved in the buffer (modified, not on disk)')
    local n0 = #notes
    prev = agentls.last_result()
    vim.cmd('AgentRun TWO-TASKS-B: run the tests')
    r = wait_result(prev)
    local ans = r and ((r.answer ~= vim.NIL and r.answer) or '') or ''
    note(r ~= nil and r.status == 'completed' and ans:find('TWO-TASKS-GOTEST-OK', 1, true) ~= nil,
      'task B\'s go test saw task A\'s edit and passed (answer: ' .. ans .. ')')
    disk = table.concat(vim.fn.readfile(name), '\n')
    note(disk:find('name + "!"', 1, true) ~= nil and not vim.api.nvim_buf_get_option(bufnr, 'modified'),
      'the plugin saved the buffer before the command (on disk, not modified)')
    note(#notes_matching('unsaved changes of yours', n0 + 1) == 0, 'the user was not told of unsaved changes of theirs (there were none)')

    -- Task C: the user types a line and does not save; a command runs.
    -- agentls never saves the user's text: the buffer stays modified, the
    -- disk lacks the line, and the task's report names main.go.
    vim.api.nvim_buf_set_lines(bufnr, 0, 0, false, { '// the user\'s unsaved line' })
    prev = agentls.last_result()
    vim.cmd('AgentRun TWO-TASKS-C: run the tests again')
    r = wait_result(prev)
    note(r ~= nil and r.status == 'completed', 'task C completed (' .. tostring(r and r.status) .. ')')
    disk = table.concat(vim.fn.readfile(name), '\n')
    note(disk:find("the user's unsaved line", 1, true) == nil and vim.api.nvim_buf_get_option(bufnr, 'modified'),
      'the user\'s unsaved line was not saved for the command (buffer still modified)')
    local rep = ''
    if r and type(r.report) == 'string' and r.report ~= '' then
      rep = table.concat(vim.fn.readfile(vim.uri_to_fname(r.report)), '\n')
    end
    note(rep:find('main.go has unsaved changes of yours: `go test ./...` ran on the saved copy', 1, true) ~= nil,
      'task C\'s report names main.go\'s unsaved changes (' .. tostring(r and r.report) .. ')')
    vim.api.nvim_buf_set_lines(bufnr, 0, 1, false, {})
  end

  -- 10. The answer of a task this plugin did not start (a plain
  -- workspace/executeCommand, whose reply no plugin code reads) streams
  -- into the answer float; at its end the float takes the focus, so q
  -- closes it (no unfocused float left behind).
  if want.orphan then
    agentls.config.show_answer = true -- off for the scenarios above
    local win0 = vim.api.nvim_get_current_win()
    local function stream_win()
      for _, w in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)):match('^agentls://answer%-') then return w end
      end
    end
    vim.lsp.buf.execute_command({ command = 'agentls.run', arguments = { { prompt = 'ORPHAN-STREAM: explain main', mode = 'ask' } } })
    local focused = vim.wait(20000, function() return stream_win() ~= nil and vim.api.nvim_get_current_win() == stream_win() end, 20)
    local w = stream_win()
    local text = w and table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), '\n') or ''
    note(focused and text:find('ORPHAN-END', 1, true) ~= nil and text:find(': answer written', 1, true) ~= nil,
      'the streamed answer of a task started elsewhere ends whole in the focused float: ' .. text:gsub('\n', ' | '):sub(1, 200))
    vim.api.nvim_feedkeys('q', 'x', false)
    note(stream_win() == nil and vim.api.nvim_get_current_win() == win0, 'q closes it and the focus is back in the buffer')
    agentls.config.show_answer = false
  end
end, debug.traceback)

if not ok_main then note(false, 'test error: ' .. tostring(err_main)) end
finish()
