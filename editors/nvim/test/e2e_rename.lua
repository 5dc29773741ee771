-- Headless end-to-end test of a rename as a user meets it: Neovim with
-- gopls (attached to every Go buffer by a FileType autocmd, as lspconfig
-- does) and agentls; only the declaring file, main.go, is open; its caller
-- main_test.go is not. `:AgentRun Rename Greet to Welcome everywhere`: the
-- model calls rename_symbol; the rename reaches both files (main.go's
-- buffer, main_test.go loaded by Neovim for the edit and saved by the
-- plugin), the module still type-checks, and no message says the rename
-- was not applied.
--
--   timeout 120 nvim --headless --clean -u NONE \
--     --cmd 'set rtp^=editors/nvim' -S editors/nvim/test/e2e_rename.lua WORKSPACE/main.go
--
-- Environment:
--   AGENTLS_E2E_CMD       JSON array: the agentls server command (required)
--   AGENTLS_E2E_GOPLS     the gopls binary (default: gopls)
--   AGENTLS_E2E_FINDINGS  file the findings are written to (required)
-- Verdict: exit code 0 when every check passed (cquit 1 otherwise).
local findings_file = os.getenv('AGENTLS_E2E_FINDINGS') or '/tmp/agentls-nvim-rename-findings.txt'
local findings = {}
local failed = 0
local t_start = vim.loop.hrtime()
local function ms() return (vim.loop.hrtime() - t_start) / 1e6 end
local function note(ok, what)
  table.insert(findings, string.format('%s [%5.0f ms] %s', ok and 'PASS' or 'FAIL', ms(), what))
  if not ok then failed = failed + 1 end
  local f = io.open(findings_file, 'w') -- as it goes: a hang still shows how far it got
  f:write(table.concat(findings, '\n') .. '\n')
  f:close()
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

local gopls_id
local ok_main, err_main = xpcall(function()
  local shown = {}
  vim.notify = function(msg) table.insert(shown, tostring(msg)) end
  vim.cmd('runtime plugin/agentls.lua')
  local cmd = vim.json.decode((assert(os.getenv('AGENTLS_E2E_CMD'), 'AGENTLS_E2E_CMD is required')))
  local agentls = require('agentls')
  agentls.setup({ cmd = cmd, show_answer = false, settings = { model = 'e2e-model', approval = 'auto', validate = 'off' } })
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = vim.fn.fnamemodify(path, ':h')
  local test_path = root .. '/main_test.go'

  local gopls_published = 0
  local plugin_handler = vim.lsp.handlers['textDocument/publishDiagnostics']
  vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
    if ctx and ctx.client_id == gopls_id and result and result.uri == vim.uri_from_bufnr(bufnr) then gopls_published = gopls_published + 1 end
    return plugin_handler(err, result, ctx, config)
  end
  local gopls = vim.lsp.start_client({
    name = 'gopls',
    cmd = { os.getenv('AGENTLS_E2E_GOPLS') or 'gopls' },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = 'fixture' } },
  })
  if not note(gopls ~= nil, 'gopls client started') then return end
  gopls_id = gopls
  -- The user's setup: every Go buffer gets gopls (lspconfig's FileType
  -- autocmd), so a file Neovim loads for an edit gets it too.
  vim.cmd('autocmd FileType go lua vim.lsp.buf_attach_client(vim.api.nvim_get_current_buf(), ' .. gopls .. ')')
  vim.lsp.buf_attach_client(bufnr, gopls)
  agentls.attach(bufnr)
  local client
  local inited = vim.wait(20000, function()
    client = agentls.client(bufnr)
    local g = vim.lsp.get_client_by_id(gopls)
    return client ~= nil and client.server_capabilities ~= nil and client.initialized ~= false
      and g ~= nil and g.initialized ~= false and g.server_capabilities ~= nil
  end, 50)
  if not note(inited, 'agentls and gopls started and initialized') then return end
  -- gopls has loaded the module (it published for main.go): the rename
  -- the agent forwards to it is answered at once, as in a user's editor.
  if not note(vim.wait(90000, function() return gopls_published > 0 end, 50), 'gopls published diagnostics for main.go') then return end
  note(vim.fn.bufloaded(test_path) == 0, 'main_test.go (the caller) is not open in the editor')
  local test_before = read_file(test_path) or ''

  local prev = agentls.last_result()
  local t0 = vim.loop.hrtime()
  vim.cmd('AgentRun Rename Greet to Welcome everywhere')
  local done = vim.wait(90000, function()
    local r = agentls.last_result()
    return r ~= nil and r ~= prev
  end, 20)
  local r = agentls.last_result()
  if not note(done and r ~= nil, string.format('the task ended (%s, %.0f ms)', tostring(r and r.status), (vim.loop.hrtime() - t0) / 1e6)) then return end
  note(r.status == 'completed', 'the task completed (status ' .. tostring(r.status) .. ')')
  local answer = (r.answer ~= vim.NIL and r.answer) or ''
  note(answer:find('RENAME-DONE', 1, true) ~= nil, 'the model was told the rename was applied: ' .. answer)
  local changed = type(r.changedFiles) == 'table' and table.concat(r.changedFiles, ',') or ''
  note(changed == 'main.go,main_test.go', 'the reply lists both files as changed: ' .. changed)

  local buf = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
  note(buf:find('func Welcome(name string)', 1, true) ~= nil and buf:find('Welcome("world")', 1, true) ~= nil
    and buf:find('Greet', 1, true) == nil, 'main.go\'s buffer holds the rename')
  local test_after = read_file(test_path) or ''
  note(test_after == test_before:gsub('got := Greet%(', 'got := Welcome('),
    'main_test.go on disk holds the rename and nothing else: ' .. test_after:gsub('\n', ' | '))
  local tb = vim.fn.bufnr(test_path)
  note(tb < 0 or not vim.api.nvim_buf_get_option(tb, 'modified'),
    'main_test.go is not left modified in a buffer (the plugin saved what Neovim loaded for the edit)')

  local disk_main = read_file(path) or ''
  note(disk_main:find('func Greet(', 1, true) ~= nil, 'main.go on disk is as the user last saved it (the rename is in its buffer, unsaved)')
  vim.cmd('silent write')
  note(not vim.api.nvim_buf_get_option(bufnr, 'modified'), 'the user saved main.go')
  local vet = vim.fn.system({ 'go', 'vet', './...' })
  note(vim.v.shell_error == 0, 'go vet ./... passes after the rename (both files agree): ' .. vet:gsub('\n', ' | '))
  local bad
  for _, m in ipairs(shown) do
    if m:find('not applied', 1, true) or m:find('one file at a time', 1, true) or m:find('no file changed', 1, true) then bad = m end
  end
  note(bad == nil, 'no message says the rename was not applied: ' .. tostring(bad))
  vim.lsp.stop_client(gopls)
end, debug.traceback)

if not ok_main then note(false, 'test error: ' .. tostring(err_main)) end
finish()
