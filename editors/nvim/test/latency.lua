-- The 2-edit latency task (editors/testing/models/latency.json) in headless
-- Neovim with no language server but agentls attached: nothing checks
-- notes.txt, so the plugin answers agentls/diagnostics `checked: false` and
-- the edits must not wait for diagnostics. Run by scripts/measure-edit-latency.
--
--   nvim --headless --clean -u NONE --cmd 'set rtp^=editors/nvim' \
--     -S editors/nvim/test/latency.lua WORKSPACE/main.go
--
-- Environment: AGENTLS_E2E_CMD (JSON array: the server command),
-- AGENTLS_LATENCY_OUT (file: one line per run, "<ms> <status> <model calls>"),
-- AGENTLS_LATENCY_RUNS (default 3). Each run starts from notes.txt with two
-- "todo" lines and is timed from sending agentls.run to its reply, the
-- server already initialized. Exit code 0 when every run completed.
local out = assert(os.getenv('AGENTLS_LATENCY_OUT'), 'AGENTLS_LATENCY_OUT')
local runs = tonumber(os.getenv('AGENTLS_LATENCY_RUNS') or '3')
local lines = {}
local failed = 0
local ok, err = xpcall(function()
  vim.cmd('runtime plugin/agentls.lua')
  local agentls = require('agentls')
  agentls.setup({ cmd = vim.fn.json_decode(os.getenv('AGENTLS_E2E_CMD')), show_answer = false, notify = false,
    settings = { model = 'e2e-model', approval = 'auto' } })
  local bufnr = vim.api.nvim_get_current_buf()
  agentls.attach(bufnr)
  local client
  local inited = vim.wait(20000, function()
    client = agentls.client(bufnr)
    return client ~= nil and client.server_capabilities ~= nil and client.initialized ~= false
  end, 20)
  if not inited then error('the agentls client did not initialize') end
  local notes = vim.fn.getcwd() .. '/notes.txt'
  for i = 1, runs do
    -- Back to two "todo" lines, in the buffer when a run loaded one.
    local b = vim.fn.bufnr(notes)
    if b > 0 and vim.api.nvim_buf_is_loaded(b) then
      vim.api.nvim_buf_set_lines(b, 0, -1, false, { 'first: todo', 'second: todo' })
      vim.api.nvim_buf_call(b, function() vim.cmd('silent write') end)
    else
      vim.fn.writefile({ 'first: todo', 'second: todo' }, notes)
    end
    local result
    local t0 = vim.loop.hrtime()
    agentls.run({ prompt = 'Latency: two edits to notes.txt', mode = 'edit' },
      { bufnr = bufnr, quiet = true, on_done = function(e, r) result = r or { status = 'error: ' .. vim.inspect(e) } end })
    vim.wait(60000, function() return result ~= nil end, 5)
    local ms = (vim.loop.hrtime() - t0) / 1e6
    local status = result and result.status or 'timeout'
    if status ~= 'completed' then failed = failed + 1 end
    table.insert(lines, string.format('%.0f %s %s', ms, status, tostring(result and result.llmCalls)))
  end
end, debug.traceback)
if not ok then
  table.insert(lines, 'error ' .. tostring(err):gsub('\n', ' '))
  failed = failed + 1
end
local f = io.open(out, 'w')
f:write(table.concat(lines, '\n') .. '\n')
f:close()
vim.cmd('cquit ' .. (failed > 0 and 1 or 0))
