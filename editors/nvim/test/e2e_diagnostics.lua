-- Headless end-to-end test of the editor's diagnostics in the agent loop:
-- gopls (a second language server, publishing diagnostics) and agentls
-- attached to the same buffer of the Go fixture; an agentls edit task whose
-- edit breaks the build gets gopls's compile error back in that edit's tool
-- result, and its reply lists it in introducedErrors.
--
--   timeout 90 nvim --headless --clean -u NONE \
--     --cmd 'set rtp^=editors/nvim' -S editors/nvim/test/e2e_diagnostics.lua WORKSPACE/main.go
--
-- Environment:
--   AGENTLS_E2E_CMD       JSON array: the agentls server command (required)
--   AGENTLS_E2E_GOPLS     the gopls binary (default: gopls)
--   AGENTLS_E2E_FINDINGS  file the findings are written to (required)
--   AGENTLS_E2E_TOOL_RESULT file the edit's tool result (as the model got it)
--                         is written to, for docs/agent.md
--   AGENTLS_E2E_LSP_LOG   when set, Neovim's LSP log (debug level) is copied
--                         there: every message of both servers
-- Verdict: exit code 0 when every check passed (cquit 1 otherwise).
local findings_file = os.getenv('AGENTLS_E2E_FINDINGS') or '/tmp/agentls-nvim-diag-findings.txt'
local findings = {}
local failed = 0
local t_start = vim.loop.hrtime()
local function ms() return (vim.loop.hrtime() - t_start) / 1e6 end
local function note(ok, what)
  table.insert(findings, string.format('%s [%5.0f ms] %s', ok and 'PASS' or 'FAIL', ms(), what))
  if not ok then failed = failed + 1 end
  return ok
end
local function finish()
  table.insert(findings, string.format('%d failed', failed))
  local f = io.open(findings_file, 'w')
  f:write(table.concat(findings, '\n') .. '\n')
  f:close()
  vim.cmd('cquit ' .. (failed > 0 and 1 or 0))
end

local function read_file(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local s = f:read('*a')
  f:close()
  return s
end

local ok_main, err_main = xpcall(function()
  vim.notify = function() end -- the result's message is not under test here
  if os.getenv('AGENTLS_E2E_LSP_LOG') then vim.lsp.set_log_level('debug') end
  vim.cmd('runtime plugin/agentls.lua')
  local cmd = vim.json.decode((assert(os.getenv('AGENTLS_E2E_CMD'), 'AGENTLS_E2E_CMD is required')))
  local agentls = require('agentls')
  agentls.setup({ cmd = cmd, show_answer = false, settings = { model = 'e2e-model', approval = 'auto' } })
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  local uri = vim.uri_from_bufnr(bufnr)
  local root = vim.fn.fnamemodify(path, ':h')

  -- gopls as an ordinary second client of the buffer (nvim 0.7: start_client).
  local gopls = vim.lsp.start_client({
    name = 'gopls',
    cmd = { os.getenv('AGENTLS_E2E_GOPLS') or 'gopls' },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = 'fixture' } },
    -- gopls waits 1 s after a change before it diagnoses (diagnosticsDelay);
    -- the server waits at most 3 s, so on a busy 2-core machine the default
    -- can miss. A user's gopls with the default is as good as its speed.
    init_options = { diagnosticsDelay = '50ms' },
    settings = { gopls = { diagnosticsDelay = '50ms' } },
  })
  if not note(gopls ~= nil, 'gopls client started') then return end
  -- Count gopls's publishes (its first one names no version).
  local gopls_published = 0
  local plugin_handler = vim.lsp.handlers['textDocument/publishDiagnostics']
  vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
    if ctx and ctx.client_id == gopls and result and result.uri == uri then gopls_published = gopls_published + 1 end
    return plugin_handler(err, result, ctx, config)
  end
  vim.lsp.buf_attach_client(bufnr, gopls)
  agentls.attach(bufnr)

  local client
  local inited = vim.wait(20000, function()
    client = agentls.client(bufnr)
    return client ~= nil and client.server_capabilities ~= nil and client.initialized ~= false
  end, 50)
  if not note(inited, 'agentls client started, server answered initialize') then return end

  -- Warm-up: gopls has loaded the package and published for main.go once
  -- (the server waits at most 3 s per edit; a cold gopls takes longer).
  local warm = vim.wait(60000, function() return gopls_published > 0 end, 50)
  if not note(warm, 'gopls published diagnostics for main.go') then return end
  -- Warm gopls's path for a changed buffer too (its first re-check after a
  -- change is the slow one): a line added and removed, each diagnosed.
  for _, change in ipairs({ 'add', 'remove' }) do
    local n = gopls_published
    if change == 'add' then
      vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { '// warm-up' })
    else
      vim.api.nvim_buf_set_lines(bufnr, -2, -1, false, {})
    end
    note(vim.wait(30000, function() return gopls_published > n end, 20),
      'gopls diagnosed the buffer after a warm-up change (' .. change .. ')')
  end
  vim.cmd('silent! write')
  local before = vim.diagnostic.get(bufnr, { severity = vim.diagnostic.severity.ERROR })
  note(#before == 0, string.format('the fixture compiles before the task (%d errors)', #before))

  -- The task: its scripted model edits Greet to return 42 (a compile error).
  local prev = agentls.last_result()
  local t0 = vim.loop.hrtime()
  vim.cmd('AgentRun Make Greet return the number 42')
  local done = vim.wait(40000, function()
    local r = agentls.last_result()
    return r ~= nil and r ~= prev
  end, 20)
  local r = agentls.last_result()
  if not note(done and r ~= nil, string.format('the task ended (%s, %.0f ms)', tostring(r and r.status), (vim.loop.hrtime() - t0) / 1e6)) then return end
  note(r.status == 'completed', 'the task completed (status ' .. tostring(r.status) .. ')')
  local answer = (r.answer ~= vim.NIL and r.answer) or ''
  -- The scripted model answers this only when the edit's tool result holds
  -- gopls's error (its turn matches lastToolResult "cannot use 42").
  note(answer:find('cannot use 42', 1, true) ~= nil, 'the model was answered from a tool result carrying the error: ' .. answer)
  local buf = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
  note(buf:find('return 42', 1, true) ~= nil, 'the edit reached the buffer')
  local errs = {}
  vim.wait(10000, function()
    errs = vim.diagnostic.get(bufnr, { severity = vim.diagnostic.severity.ERROR })
    return #errs > 0
  end, 50)
  local gmsg = errs[1] and errs[1].message or ''
  note(gmsg:find('cannot use 42', 1, true) ~= nil, 'gopls reports the compile error in the editor: ' .. gmsg)
  local intro = type(r.introducedErrors) == 'table' and r.introducedErrors or {}
  local listed = false
  for _, e in ipairs(intro) do if e:find('cannot use 42', 1, true) then listed = true end end
  note(listed, 'the reply\'s introducedErrors lists it: ' .. vim.json.encode(intro))

  -- The model's requests as the server sent them (the flight recorder):
  -- the request after the edit holds the tool result with gopls's error.
  local rec = read_file(root .. '/.agentls/recordings/' .. r.taskId .. '.jsonl')
  if not note(rec ~= nil, 'the task\'s flight recording exists') then return end
  local tool_result
  for line in rec:gmatch('[^\n]+') do
    local ok, ex = pcall(vim.json.decode, line)
    local req = ok and type(ex) == 'table' and (ex.request or ex.Request)
    if type(req) == 'string' then req = vim.json.decode(req) end
    for _, m in ipairs(type(req) == 'table' and req.messages or {}) do
      if m.role == 'tool' and type(m.content) == 'string' and m.content:find('new error', 1, true) then
        tool_result = m.content
      end
    end
  end
  note(tool_result ~= nil and tool_result:find('cannot use 42', 1, true) ~= nil
    and tool_result:find('main.go:', 1, true) ~= nil,
    'the model\'s next request carries the edit\'s tool result with gopls\'s error: ' .. tostring(tool_result):gsub('\n', ' | '))
  local out = os.getenv('AGENTLS_E2E_TOOL_RESULT')
  if out and tool_result then
    local f = io.open(out, 'w')
    f:write(tool_result .. '\n')
    f:close()
  end

  -- agentls/lsp (the agent's language tools through the editor's own
  -- servers), called as vim.lsp calls it: forwarded to gopls, the other
  -- client of the buffer; for a file no buffer holds, the plugin loads it
  -- in a hidden buffer, where the user's attach (here a FileType autocmd,
  -- as lspconfig does) gives it gopls.
  vim.cmd('autocmd FileType go lua vim.lsp.buf_attach_client(vim.api.nvim_get_current_buf(), ' .. gopls .. ')')
  local h = agentls._handlers()
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local decl
  for i, l in ipairs(lines) do
    local c = l:find('func Greet', 1, true)
    if c then decl = { line = i - 1, character = c + 4 } end
  end
  local refs = decl and h['agentls/lsp'](nil, { method = 'textDocument/references',
    params = { textDocument = { uri = uri }, position = decl, context = { includeDeclaration = true } } }, { client_id = client.id })
  local in_main, in_test = false, false
  for _, loc in ipairs(type(refs) == 'table' and refs or {}) do
    if loc.uri == uri then in_main = true end
    if loc.uri:find('main_test.go', 1, true) then in_test = true end
  end
  note(in_main and in_test, 'agentls/lsp forwards textDocument/references to gopls (uses in main.go and main_test.go): ' .. vim.json.encode(refs))
  local test_uri = vim.uri_from_fname(root .. '/main_test.go')
  local tlines = vim.fn.readfile(root .. '/main_test.go')
  local use
  for i, l in ipairs(tlines) do
    local c = l:find('Greet(', 1, true)
    if c and not use then use = { line = i - 1, character = c - 1 } end
  end
  local def = use and h['agentls/lsp'](nil, { method = 'textDocument/definition',
    params = { textDocument = { uri = test_uri }, position = use } }, { client_id = client.id })
  local first = type(def) == 'table' and (def[1] or def) or {}
  local hidden = vim.fn.bufnr(root .. '/main_test.go')
  note(first.uri == uri and hidden > 0 and not vim.api.nvim_buf_get_option(hidden, 'buflisted'),
    'agentls/lsp answers for a file no buffer held, from a hidden buffer gopls attached to: ' .. vim.json.encode(def))
  local none = h['agentls/lsp'](nil, { method = 'textDocument/definition',
    params = { textDocument = { uri = 'file:///nonexistent/x.go' }, position = { line = 0, character = 0 } } }, { client_id = client.id })
  note(none == vim.NIL, 'agentls/lsp answers null when no server serves the document')
  vim.lsp.stop_client(gopls)
end, debug.traceback)

if not ok_main then note(false, 'test error: ' .. tostring(err_main)) end
if os.getenv('AGENTLS_E2E_LSP_LOG') then
  vim.fn.writefile(vim.fn.readfile(vim.lsp.get_log_path()), os.getenv('AGENTLS_E2E_LSP_LOG'))
end
finish()
