-- Headless end-to-end test of a user's first day in Neovim, set up from
-- the docs' own words: docs/editors.md's Neovim snippet (read from the file
-- by the runner, AGENTLS_E2E_SNIPPET) with agentls on PATH, the user
-- settings file holding an MCP server and Claude Code's logging hook,
-- and docs/extending.md's custom command in .agentls/commands/. Four
-- journeys, each driven by the user's commands, the approval picker
-- answered as a user would ("Allow once"):
--   1. :AgentRun Rename ... with only the declaring file open: both files
--      change (agentls's own gopls: the editor has no Go server).
--   2. :AgentTools lists the MCP server's tool; a task calls it and the
--      answer shown carries its result.
--   3. a task runs a command: it runs, and the hook logs it in
--      ~/.claude/bash-command-log.txt.
--   4. :AgentPrompt review main.go: the custom command's answer is shown.
--
--   timeout 240 nvim --headless --clean -u NONE \
--     --cmd 'set rtp^=editors/nvim' -S editors/nvim/test/e2e_journeys.lua WORKSPACE/main.go
--
-- Environment: AGENTLS_E2E_SNIPPET (the snippet's file), AGENTLS_E2E_FINDINGS,
-- E2E_HOOK_LOG (the hook's log file). Verdict: the exit code.
local findings_file = assert(os.getenv('AGENTLS_E2E_FINDINGS'), 'AGENTLS_E2E_FINDINGS is required')
local findings = {}
local failed = 0
local t_start = vim.loop.hrtime()
local function ms() return (vim.loop.hrtime() - t_start) / 1e6 end
local function write_findings()
  local f = io.open(findings_file, 'w')
  f:write(table.concat(findings, '\n') .. '\n')
  f:close()
end
local function note(ok, what)
  table.insert(findings, string.format('%s [%6.0f ms] %s', ok and 'PASS' or 'FAIL', ms(), what))
  if not ok then failed = failed + 1 end
  write_findings() -- as it goes: a hang still shows how far it got
  return ok
end
local function read_file(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local s = f:read('*a')
  f:close()
  return s
end
local function one_line(s) return (tostring(s or ''):gsub('\n', ' | ')) end

-- every window's text: what the user sees in floats and splits.
local function screen_text()
  local parts = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    local b = vim.api.nvim_win_get_buf(w)
    table.insert(parts, table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n'))
  end
  return table.concat(parts, '\n')
end

-- close_floats: the user closes the answer and list floats (q).
local function close_floats()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= '' then pcall(vim.api.nvim_win_close, w, true) end
  end
end

local ok_main, err_main = xpcall(function()
  local shown = {}
  local notify = vim.notify
  vim.notify = function(msg, ...)
    table.insert(shown, tostring(msg))
    return notify(msg, ...)
  end
  vim.cmd('runtime plugin/agentls.lua')
  -- The docs' snippet, as the user pasted it into init.lua.
  local snippet = assert(os.getenv('AGENTLS_E2E_SNIPPET'), 'AGENTLS_E2E_SNIPPET is required')
  vim.cmd('luafile ' .. vim.fn.fnameescape(snippet))
  local agentls = require('agentls')
  -- The approval picker as the user answers it: "Allow once" (each
  -- question and its choices kept for the findings).
  local questions = {}
  agentls.set_picker(function(lines, items)
    table.insert(questions, { text = table.concat(lines, ' '), items = items })
    for i, it in ipairs(items) do
      if it:find('^Allow once') or it:find('^Yes') or it:find('^Allow') then return i end
    end
    return 1
  end)
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = vim.fn.fnamemodify(path, ':h')
  local test_path = root .. '/main_test.go'
  local client
  local inited = vim.wait(30000, function()
    client = agentls.client(bufnr)
    return client ~= nil and client.server_capabilities ~= nil and client.initialized ~= false
  end, 50)
  if not note(inited, 'the snippet started agentls (from PATH) on main.go and it initialized') then return end

  local function run(cmd, timeout)
    local prev = agentls.last_result()
    local nq = #questions
    local t0 = vim.loop.hrtime()
    vim.cmd(cmd)
    local done = vim.wait(timeout or 120000, function()
      local r = agentls.last_result()
      return r ~= nil and r ~= prev
    end, 20)
    local r = agentls.last_result()
    local asked = {}
    for i = nq + 1, #questions do
      table.insert(asked, questions[i].text .. ' [' .. table.concat(questions[i].items, ' / ') .. ']')
    end
    note(done and r ~= nil, string.format('%s: the task ended (%s, %.0f ms)%s', cmd, tostring(r and r.status),
      (vim.loop.hrtime() - t0) / 1e6, #asked > 0 and ('; asked: ' .. one_line(table.concat(asked, '; '))) or ''))
    for i = nq + 1, #questions do
      note(#questions[i].items >= 2, 'the question lists its choices: ' .. table.concat(questions[i].items, ' / '))
    end
    if not done then return nil end
    return r, (r.answer ~= vim.NIL and r.answer) or ''
  end

  -- 1. Rename with the declaring file open, the caller closed.
  note(vim.fn.bufloaded(test_path) == 0, 'main_test.go (the caller) is not open in the editor')
  local test_before = read_file(test_path) or ''
  local r, answer = run('AgentRun Rename Greet to Welcome everywhere')
  if r then
    note(r.status == 'completed', 'rename: the task completed (status ' .. tostring(r.status) .. ')')
    note(answer:find('RENAME-DONE', 1, true) ~= nil, 'rename: the model was told the rename was applied: ' .. one_line(answer))
    local buf = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    note(buf:find('func Welcome(name string)', 1, true) ~= nil and buf:find('Greet', 1, true) == nil,
      'rename: main.go\'s buffer holds the rename')
    local test_after = read_file(test_path) or ''
    note(test_after == test_before:gsub('got := Greet%(', 'got := Welcome('),
      'rename: main_test.go on disk holds the rename: ' .. one_line(test_after))
    close_floats()
    vim.api.nvim_buf_call(bufnr, function() vim.cmd('silent write') end)
    local vet = vim.fn.system({ 'go', 'vet', './...' })
    note(vim.v.shell_error == 0, 'rename: go vet ./... passes after it (both files agree) ' .. one_line(vet))
    -- The user undoes it: both files back, on disk too (main_test.go,
    -- which Neovim loaded for the rename, is saved again), no question.
    local nq = #questions
    local prev_undo = agentls.last_undo and agentls.last_undo()
    vim.cmd('AgentUndo')
    local undone = vim.wait(30000, function()
      local u = agentls.last_undo and agentls.last_undo()
      return u ~= nil and u ~= prev_undo
    end, 20)
    note(undone and #questions == nq, ':AgentUndo ended without a question: ' .. one_line(vim.inspect(agentls.last_undo and agentls.last_undo())))
    buf = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    note(buf:find('func Greet(name string)', 1, true) ~= nil and buf:find('Welcome', 1, true) == nil, 'undo: main.go\'s buffer is as before')
    note(vim.wait(10000, function() return read_file(test_path) == test_before end, 50),
      'undo: main_test.go on disk is as before: ' .. one_line(read_file(test_path)))
    vim.api.nvim_buf_call(bufnr, function() vim.cmd('silent write') end)
    vet = vim.fn.system({ 'go', 'vet', './...' })
    note(vim.v.shell_error == 0, 'undo: go vet ./... passes once the user saved main.go ' .. one_line(vet))
  end

  -- 2. The MCP server of the user's settings file.
  local tools_before = screen_text()
  vim.cmd('AgentTools')
  local listed = vim.wait(60000, function() return screen_text():find('mcp__journey__echo', 1, true) ~= nil end, 50)
  note(listed and not tools_before:find('mcp__journey__echo', 1, true),
    ':AgentTools lists the MCP server\'s tool mcp__journey__echo' .. (listed and '' or (': ' .. one_line(screen_text()):sub(1, 600))))
  close_floats() -- the user closes the list
  r, answer = run('AgentRun Echo JOURNEY-MCP through the MCP server')
  if r then
    note(answer:find('MCP-DONE', 1, true) ~= nil, 'mcp: the model read the tool\'s result: ' .. one_line(answer))
    note(vim.wait(5000, function() return screen_text():find('echo: JOURNEY-MCP', 1, true) ~= nil end, 50),
      'mcp: the answer shown carries the tool\'s result')
  end
  close_floats()

  -- 3. Claude Code's logging hook.
  local log = assert(os.getenv('E2E_HOOK_LOG'), 'E2E_HOOK_LOG is required')
  r, answer = run('AgentRun Run the logged command')
  if r then
    note(answer:find('COMMAND-RAN', 1, true) ~= nil, 'hook: the command ran (the hook did not block it): ' .. one_line(answer))
    local logged = read_file(log)
    note(logged ~= nil and logged:find('echo journey-logged', 1, true) ~= nil,
      'hook: ~/.claude/bash-command-log.txt holds the command: ' .. one_line(logged or '(no file)'))
  end
  close_floats()

  -- 4. The custom command of .agentls/commands/review.md.
  r, answer = run('AgentPrompt review main.go')
  if r then
    note(answer:find('REVIEW-DONE', 1, true) ~= nil, 'custom command: /review main.go answered: ' .. one_line(answer))
    note(vim.wait(5000, function() return screen_text():find('REVIEW-DONE', 1, true) ~= nil end, 50),
      'custom command: the answer is shown')
  end

  local errs = {}
  for _, m in ipairs(shown) do
    if m:find('not applied', 1, true) or m:find('failed', 1, true) or m:find('blocked', 1, true) then table.insert(errs, m) end
  end
  note(#errs == 0, 'no message says something failed: ' .. one_line(table.concat(errs, '; ')))
end, debug.traceback)

if not ok_main then note(false, 'test error: ' .. tostring(err_main)) end
table.insert(findings, string.format('%d failed', failed))
write_findings()
vim.cmd('cquit ' .. (failed > 0 and 1 or 0))
