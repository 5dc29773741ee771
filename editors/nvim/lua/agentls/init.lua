-- agentls.nvim: the agentls language server in Neovim 0.7 and newer, on plain
-- vim.lsp (lspconfig optional). See :help agentls.
local M = {}
local ui = require('agentls.ui')
local review = require('agentls.review')
local stream = require('agentls.stream')
local ghost = require('agentls.ghost')

-- Server commands of the agentls contract (docs/editors.md).
M.commands = {
  run = 'agentls.run',
  cancel = 'agentls.cancel',
  tasks = 'agentls.tasks',
  show_report = 'agentls.showReport',
  result = 'agentls.result',
  undo = 'agentls.undo',
  resume = 'agentls.resume',
  prompts = 'agentls.prompts',
  tools = 'agentls.tools',
}

local defaults = {
  cmd = { 'agentls', 'serve' },
  -- nil: every file type. A list limits where the client attaches.
  filetypes = nil,
  root_markers = { '.git', 'go.mod', '.agentls', 'package.json', 'Cargo.toml', 'pyproject.toml' },
  autostart = true,
  -- Settings the server reads (initializationOptions and the "agentls"
  -- section of workspace/didChangeConfiguration), forwarded whole: any key
  -- of editors/contract.json's "settings" (mcpServers, maxTurns, sandbox,
  -- ...). Empty values are omitted.
  settings = {
    model = nil,
    baseURL = nil,
    approval = nil, -- 'ask' | 'auto' | 'deny'
    allowCommands = nil, -- e.g. { 'go test', 'go build' }
    checkCommand = nil,
    review = nil, -- 'off' | 'always' | 'outside' (files not open in a buffer): review each hunk before it is applied
    hooks = nil, -- Claude Code's format: { Stop = { { hooks = { { type = 'command', command = '~/bin/x.sh' } } } } }
  },
  -- A command whose output is the API key (e.g. { 'pass', 'show', 'openai' }),
  -- given to the server as OPENAI_API_KEY. Without it the server inherits
  -- OPENAI_API_KEY from Neovim's environment.
  api_key_cmd = nil,
  -- One line with vim.notify when a task ends (never more: a longer message
  -- would stop the screen at "Press ENTER").
  notify = true,
  -- A floating window in the top right corner with the activity and the
  -- plan checklist while a task runs.
  progress_window = true,
  -- Where answers, task lists and reports open: 'float' or 'split'.
  view = 'float',
  -- Open the answer of an ask or plan task when it ends.
  show_answer = true,
  -- Ghost text (inline completion) in Insert mode, from a server that
  -- offers it (settings.completion.enabled = true): { enabled, debounce_ms,
  -- keys = { accept, next, prev, dismiss, trigger } }. :help agentls-ghost.
  ghost = ghost.defaults,
}

M.config = vim.deepcopy(defaults)

-- Progress state per token, for status() and notifications.
local progress = {} -- token -> { title, message, percentage, done }
local runs = {} -- token -> { prompt, client_id, request_id, bufnr }
local own_tokens = {} -- tokens of the tasks this plugin started
local last_result = nil
local last_undo = nil
local run_seq = 0

local has = function(feature) return vim.fn.has(feature) == 1 end

local function log_notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = 'agentls' })
end

-- guess_mode: "ask" when the prompt is a question and no edit is asked for.
function M.guess_mode(prompt)
  local p = vim.trim(prompt):lower()
  local edit_verbs = { 'fix', 'add', 'change', 'rename', 'refactor', 'implement', 'write', 'remove', 'delete',
    'update', 'replace', 'make', 'create', 'convert', 'move', 'extract', 'insert', 'edit', 'rewrite' }
  local qwords = { 'what', 'why', 'how', 'where', 'which', 'who', 'when', 'explain', 'describe', 'is', 'are',
    'does', 'do', 'can', 'could', 'should', 'would', 'list', 'summarize', 'summarise' }
  local first = p:match('^(%a+)') or ''
  local question = p:sub(-1) == '?' or vim.tbl_contains(qwords, first)
  local rest = p:gsub('^%a+', '', 1)
  local has_edit = false
  for w in rest:gmatch('%a+') do
    if vim.tbl_contains(edit_verbs, w) then has_edit = true end
  end
  if question and not has_edit then return 'ask' end
  local wh = { 'how', 'why', 'what', 'where', 'which', 'who', 'when', 'is', 'are', 'does', 'do' }
  if question and p:sub(-1) == '?' and vim.tbl_contains(wh, first) then return 'ask' end
  return 'edit'
end

-- server_settings: the user's settings, whole, as the server reads them:
-- every key is forwarded (the server reports one it does not know, and
-- asks before applying one that widens the user's own settings file).
-- Empty strings and empty tables are left out (unset).
function M.server_settings(s)
  local out = {}
  for k, v in pairs(s or {}) do
    if type(v) == 'string' then
      if vim.trim(v) ~= '' then out[k] = vim.trim(v) end
    elseif type(v) == 'table' then
      if next(v) ~= nil then out[k] = v end
    elseif v ~= nil and v ~= vim.NIL then
      out[k] = v
    end
  end
  return out
end

-- Plan checklist: parse "[x] item" lines of a progress message.
function M.parse_plan(message)
  local doing, plan = {}, {}
  for line in ((message or '') .. '\n'):gmatch('(.-)\n') do
    local mark, text = line:match('^%s*%[([xX >%-])%]%s+(.*)$')
    if mark then
      local state = ({ x = 'done', X = 'done', [' '] = 'todo', ['-'] = 'skipped', ['>'] = 'active' })[mark]
      table.insert(plan, { state = state, text = text })
    elseif vim.trim(line) ~= '' then
      table.insert(doing, vim.trim(line))
    end
  end
  return table.concat(doing, ' '), plan
end

-- elapsed_text(start): the time since start (vim.loop.now() milliseconds),
-- "7 s" or "2 min 05 s"; ticks every second while a task runs (tick timer).
function M.elapsed_text(start)
  local s = math.floor(((vim.loop.now() - (start or vim.loop.now())) / 1000))
  if s < 60 then return string.format('%d s', s) end
  return string.format('%d min %02d s', math.floor(s / 60), s % 60)
end

-- activity(doing): the server's activity without its own " · N s", which is
-- as old as its last report (the plugin shows a ticking time instead).
function M.activity(doing)
  return (doing:gsub(' · %d+ s$', ''))
end

-- phase_text(p): the activity, with how long it has lasted once that is 2 s
-- or more: "running go vet ./... (9 s)", "thinking (4 s)".
function M.phase_text(p, doing)
  local text = M.activity(doing)
  if p.phase_start and p.phase then
    local s = math.floor((vim.loop.now() - p.phase_start) / 1000)
    if s >= 2 then
      local head, rest = text:match('^(.-)( · turn .*)$')
      if head then return head .. ' (' .. s .. ' s)' .. rest end
      return text .. ' (' .. s .. ' s)'
    end
  end
  return text
end

-- A timer redraws the progress window and the statusline every second while
-- a task runs, so the time moves between the server's reports.
local tick_timer = nil
local function any_progress()
  for _, p in pairs(progress) do
    if not p.done then return true end
  end
  return false
end
function M.tick()
  if any_progress() then
    if not tick_timer then
      tick_timer = vim.loop.new_timer()
      tick_timer:start(1000, 1000, vim.schedule_wrap(function()
        if not any_progress() then return M.tick() end
        M.refresh_progress()
        vim.cmd('redrawstatus')
      end))
    end
  elseif tick_timer then
    tick_timer:stop()
    tick_timer:close()
    tick_timer = nil
  end
end

-- status(): a short line for the statusline, '' when no task runs.
--   set statusline+=%{luaeval("require'agentls'.status()")}
function M.status()
  local parts = {}
  for _, p in pairs(progress) do
    if not p.done then
      local doing, plan = M.parse_plan(p.message)
      local done = 0
      for _, it in ipairs(plan) do
        if it.state == 'done' or it.state == 'skipped' then done = done + 1 end
      end
      local s = 'agentls'
      if #plan > 0 then s = s .. string.format(' %d/%d', done, #plan) end
      if p.percentage then s = s .. string.format(' %d%%', p.percentage) end
      if doing ~= '' then s = s .. ': ' .. M.phase_text(p, doing) end
      table.insert(parts, s .. ' · ' .. M.elapsed_text(p.start))
    end
  end
  table.sort(parts)
  return table.concat(parts, ' | ')
end

-- statusline(): status() for a statusline item that composes with the rest
-- of the line: ' [agentls 1/2: reading main.go]' while a task runs, '' else.
--   set statusline+=%{luaeval(\"require'agentls'.statusline()\")}
function M.statusline()
  local s = M.status()
  if s == '' then return '' end
  return ' [' .. ui.one_line(s, 60) .. ']'
end

-- progress_lines(): what the progress window shows: per running task its
-- title, activity and plan checklist.
function M.progress_lines()
  local lines = {}
  local tokens = vim.tbl_keys(progress)
  table.sort(tokens, function(a, b) return tostring(a) < tostring(b) end)
  for _, token in ipairs(tokens) do
    local p = progress[token]
    if not p.done then
      local doing, plan = M.parse_plan(p.message)
      table.insert(lines, ui.one_line('agentls: ' .. (p.title or 'task'):gsub('^agentls: ', '') .. (p.percentage and string.format(' %d%%', p.percentage) or '') .. ' · ' .. M.elapsed_text(p.start), 70))
      if doing ~= '' then table.insert(lines, ui.one_line('  ' .. M.phase_text(p, doing), 70)) end
      for _, it in ipairs(plan) do
        local mark = ({ done = 'x', todo = ' ', skipped = '-', active = '>' })[it.state]
        table.insert(lines, ui.one_line(string.format('  [%s] %s', mark, it.text), 70))
      end
    end
  end
  return lines
end

function M.refresh_progress()
  if M.config.progress_window then ui.progress(M.progress_lines()) end
  M.tick()
end

-- progress_state(): a copy of the progress table (for tests and statuslines).
function M.progress_state() return vim.deepcopy(progress) end

-- last_result(): the reply of the last agentls.run that finished.
function M.last_result() return last_result end
function M.last_undo() return last_undo end

local function on_progress(result, ctx)
  if type(result) ~= 'table' or type(result.value) ~= 'table' then return end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client or client.name ~= 'agentls' then return end
  local token, v = result.token, result.value
  local p = progress[token] or { start = vim.loop.now() }
  progress[token] = p
  p.client_id = ctx.client_id
  if v.kind == 'begin' then
    p.title = v.title
    p.done = false
    p.start = vim.loop.now()
  elseif v.kind == 'end' then
    p.done = true
    p.percentage = 100
  end
  if v.percentage then p.percentage = v.percentage end
  local old_plan = p.plan_text
  if v.message then
    -- The phase (the activity line without the server's counters) and
    -- when it began, for "running go vet ./... (9 s)".
    local phase = M.activity((v.message:match('^[^\n]*') or ''):gsub(' · turn .*$', ''))
    if phase ~= p.phase then p.phase, p.phase_start = phase, vim.loop.now() end
    p.message = v.message
    local _, plan = M.parse_plan(v.message)
    local lines = {}
    for _, it in ipairs(plan) do
      local mark = ({ done = 'x', todo = ' ', skipped = '-', active = '>' })[it.state]
      table.insert(lines, string.format('[%s] %s', mark, it.text))
    end
    p.plan_text = table.concat(lines, '\n')
  end
  if v.kind == 'end' and M.config.notify and not own_tokens[token] then
    -- Tasks started elsewhere (a code action of another plugin): one line.
    log_notify(ui.one_line((p.title or 'agentls') .. ': ' .. (v.message or 'done')))
  end
  M.refresh_progress()
  vim.cmd('redrawstatus')
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'AgentlsProgress', modeline = false, data = { token = token, value = v } })
end

-- progress_handler wraps the default $/progress handler: the default keeps
-- feeding LspProgressUpdate (0.7-0.9) / LspProgress (0.10+) for other
-- plugins, and we keep the checklist for status() and vim.notify.
local function progress_handler(err, result, ctx, config)
  local default = vim.lsp.handlers['$/progress']
  if default then pcall(default, err, result, ctx, config) end
  on_progress(result, ctx)
end

local get_clients = function(filter)
  if vim.lsp.get_clients then return vim.lsp.get_clients(filter) end
  if filter and filter.bufnr then
    local out = {}
    for _, c in pairs(vim.lsp.buf_get_clients(filter.bufnr)) do table.insert(out, c) end
    return out
  end
  return vim.lsp.get_active_clients()
end

-- col_to_lsp: a byte column of line in the client's offset encoding.
local function col_to_lsp(line, col, enc)
  if enc == 'utf-8' then return col end
  local ok, u32, u16 = pcall(vim.str_utfindex, line, col)
  if not ok then return col end
  return enc == 'utf-32' and u32 or u16
end

-- Server requests that are being answered: the approval picker closes when
-- its request is withdrawn ($/cancelRequest) or no task runs any more.
local open_question = nil -- { id?, withdrawn }
local pick_fn = function(...) return ui.pick(...) end

-- set_picker(fn): replace the approval picker (tests; fn(prompt_lines,
-- items, opts) -> index|nil, called inside the synchronous handler).
function M.set_picker(fn) pick_fn = fn or function(...) return ui.pick(...) end end
function M.open_question() return open_question end

local function any_task_running()
  for _, p in pairs(progress) do
    if not p.done then return true end
  end
  return next(runs) ~= nil
end

-- approve: window/showMessageRequest. The question (the whole command) and
-- its actions in a modal float; an empty answer asks again, it never
-- means Deny. Withdrawn (RequestCancelled, no action) when the server
-- cancels the request or the tasks end.
local function show_message_request(_, params, ctx)
  if type(params) ~= 'table' or type(params.actions) ~= 'table' or #params.actions == 0 then
    if type(params) == 'table' and params.message then log_notify(ui.one_line(params.message)) end
    return vim.NIL
  end
  local q = { id = ctx and ctx.id, withdrawn = false, message = params.message }
  open_question = q
  local titles = {}
  for _, a in ipairs(params.actions) do table.insert(titles, a.title) end
  local had_task = any_task_running()
  local choice
  while not choice and not q.withdrawn do
    choice = pick_fn(vim.split(params.message or '', '\n', { plain = true }), titles, {
      on_cancel = next(runs) ~= nil and function() M.cancel() end or nil,
      withdrawn = function()
        if had_task and not any_task_running() then q.withdrawn = true end
        return q.withdrawn
      end,
    })
  end
  open_question = nil
  if q.withdrawn or not choice then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestCancelled, 'withdrawn by the server')
  end
  return params.actions[choice]
end

local function cancel_request(_, params)
  if open_question and type(params) == 'table' and (open_question.id == nil or open_question.id == params.id) then
    open_question.withdrawn = true
  end
end

-- apply_edit: workspace/applyEdit. An edit whose change annotations ask
-- for confirmation (the server's `review` setting) opens the review float
-- (agentls.review): only the hunks the user accepts are applied. Withdrawn
-- like an approval (RequestCancelled) when the server cancels the request
-- or the tasks end. Any other edit goes to the default handler.
local function apply_edit(err, params, ctx, config)
  local default = vim.lsp.handlers['workspace/applyEdit']
  if type(params) ~= 'table' or not review.needs_confirmation(params.edit) then
    -- (A versioned edit for an older text than the buffer's is refused:
    -- the default handler would skip it and still answer applied.)
    local stale = type(params) == 'table' and review.stale(params.edit)
    if stale then return { applied = false, failureReason = stale } end
    return default(err, params, ctx, config)
  end
  local c = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  local q = { id = ctx and ctx.id, withdrawn = false, message = params.label }
  open_question = q
  local had_task = any_task_running()
  local ok, res = pcall(review.handle, params, c and c.offset_encoding or 'utf-16', {
    on_cancel = next(runs) ~= nil and function() M.cancel() end or nil,
    withdrawn = function()
      if had_task and not any_task_running() then q.withdrawn = true end
      return q.withdrawn
    end,
  })
  if open_question == q then open_question = nil end
  if not ok then return { applied = false, failureReason = 'review failed: ' .. tostring(res) } end
  if res == nil then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestCancelled, 'withdrawn: the task ended')
  end
  return res
end

-- agentls/saveDocuments: write the listed buffers that are loaded and
-- modified, without a prompt (noautocmd-free :write, errors caught).
local function save_documents(_, params)
  local saved, failed = {}, {}
  for _, uri in ipairs(type(params) == 'table' and params.uris or {}) do
    local ok, fname = pcall(vim.uri_to_fname, uri)
    local bufnr = ok and vim.fn.bufnr(fname) or -1 -- never creates a buffer
    if bufnr < 0 or not vim.api.nvim_buf_is_loaded(bufnr) or not vim.api.nvim_buf_get_option(bufnr, 'modified') then
      table.insert(saved, uri)
    else
      local wok, werr = pcall(vim.api.nvim_buf_call, bufnr, function() vim.cmd('silent keepalt write!') end)
      if wok and not vim.api.nvim_buf_get_option(bufnr, 'modified') then
        table.insert(saved, uri)
      else
        table.insert(failed, { uri = uri, reason = ui.one_line(tostring(werr or 'not written'), 200) })
      end
    end
  end
  return { saved = saved, failed = failed }
end

-- lsp_diagnostic(d, bufnr, enc): a vim.diagnostic entry in LSP shape
-- (0-based lines; byte columns converted to the client's offset encoding).
function M.lsp_diagnostic(d, bufnr, enc)
  local function char(lnum, col)
    if not bufnr or not vim.api.nvim_buf_is_loaded(bufnr) then return col end
    local line = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ''
    return col_to_lsp(line, math.min(col, #line), enc or 'utf-16')
  end
  local el, ec = d.end_lnum or d.lnum, d.end_col or d.col
  local out = {
    range = { start = { line = d.lnum, character = char(d.lnum, d.col) },
      ['end'] = { line = el, character = char(el, ec) } },
    severity = d.severity,
    message = d.message,
  }
  if d.source then out.source = d.source end
  if d.code then out.code = d.code end
  return out
end

-- The version of the text each language server's last
-- textDocument/publishDiagnostics was for, per document URI and client id.
-- vim.diagnostic keeps no version, so the plugin notes it as the
-- notifications pass (track_published_versions wraps the default handler).
local published = {}

local function track_published_versions()
  if M._tracking_published then return end
  M._tracking_published = true
  local orig = vim.lsp.handlers['textDocument/publishDiagnostics']
  vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
    if type(result) == 'table' and type(result.uri) == 'string' and type(result.version) == 'number'
      and ctx and ctx.client_id then
      published[result.uri] = published[result.uri] or {}
      published[result.uri][ctx.client_id] = result.version
    end
    return orig(err, result, ctx, config)
  end
end
M._published = published

-- diagnostics_version: the version of uri's text every other language server
-- that names versions has published diagnostics for (the oldest of them), or
-- nil when none names one. Not the buffer's own version: right after an edit
-- the buffer is ahead of the diagnostics, and the server waits until they
-- catch up.
local function diagnostics_version(uri)
  local v
  for cid, ver in pairs(published[uri] or {}) do
    local c = vim.lsp.get_client_by_id(cid)
    if c and c.name ~= 'agentls' and (v == nil or ver < v) then v = ver end
  end
  return v
end

-- agentls/diagnostics: the editor's diagnostics for the listed documents
-- (all buffers that have some for an empty list), agentls's own excluded.
-- checked(bufnr): whether a language server other than agentls is attached
-- to the buffer (one that may publish diagnostics for it).
function M.checked(bufnr)
  local filter = {}
  filter.bufnr = bufnr
  for _, other in pairs(get_clients(filter)) do
    if other.name ~= 'agentls' then return true end
  end
  return false
end

local function editor_diagnostics(_, params, ctx)
  local own = {}
  for _, c in pairs(get_clients()) do
    if c.name == 'agentls' then
      own[vim.lsp.diagnostic.get_namespace(c.id)] = true
    end
  end
  local bufs = {}
  local unopened = {} -- no buffer: no language server of this editor checks it
  local uris = type(params) == 'table' and params.uris or {}
  if #uris == 0 then
    local seen = {}
    for _, d in ipairs(vim.diagnostic.get()) do
      if not seen[d.bufnr] then seen[d.bufnr] = true; table.insert(bufs, d.bufnr) end
    end
  else
    for _, uri in ipairs(uris) do
      local b = vim.fn.bufnr(vim.uri_to_fname(uri))
      if b > 0 then table.insert(bufs, b) else table.insert(unopened, uri) end
    end
  end
  local c = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  local enc = c and c.offset_encoding or 'utf-16'
  local out = {}
  for _, b in ipairs(bufs) do
    local list = {}
    for _, d in ipairs(vim.diagnostic.get(b)) do
      if not own[d.namespace] then table.insert(list, M.lsp_diagnostic(d, b, enc)) end
    end
    local item = { uri = vim.uri_from_bufnr(b), diagnostics = list }
    item.version = diagnostics_version(item.uri)
    -- Whether a language server other than agentls is attached to the
    -- buffer: without one nothing checks it, and the server does not wait
    -- for diagnostics after an edit.
    item.checked = M.checked(b)
    table.insert(out, item)
  end
  for _, uri in ipairs(unopened) do table.insert(out, { uri = uri, diagnostics = {}, checked = false }) end
  return out
end

-- agentls/lsp: one LSP request ({method, params}) forwarded to the other
-- language servers attached to the document (gopls, rust-analyzer, ...
-- with the user's configuration), opening the file in a hidden buffer when
-- no buffer holds it; their first non-null result, or null. A request
-- without a document (workspace/symbol) goes to every other client. A
-- client that answers MethodNotFound is not asked again.
local lsp_unsupported = {} -- [client id][method] = true
local function clients_of(bufnr)
  if bufnr == nil then return get_clients() end
  return get_clients({ bufnr = bufnr })
end
local function forward_lsp(_, params)
  if type(params) ~= 'table' or type(params.method) ~= 'string' then return vim.NIL end
  local p = params.params
  local uri = type(p) == 'table' and type(p.textDocument) == 'table' and p.textDocument.uri or nil
  local bufnr
  if type(uri) == 'string' then
    local fname = vim.uri_to_fname(uri)
    bufnr = vim.fn.bufnr(fname)
    if bufnr < 0 and vim.fn.filereadable(fname) == 0 then return vim.NIL end
    if bufnr < 0 then
      -- A hidden, unlisted buffer: loading it runs the FileType autocmds
      -- that attach the language servers.
      bufnr = vim.fn.bufadd(fname)
      vim.api.nvim_buf_set_option(bufnr, 'buflisted', false)
      vim.fn.bufload(bufnr)
      if vim.api.nvim_buf_get_option(bufnr, 'filetype') == '' then
        vim.api.nvim_buf_call(bufnr, function() vim.cmd('silent! filetype detect') end)
      end
    end
  end
  local clients = clients_of(bufnr)
  if bufnr and #clients <= 1 then
    -- A server just attached to the new buffer may still be starting.
    vim.wait(5000, function()
      for _, c in pairs(clients_of(bufnr)) do
        if c.name ~= 'agentls' and c.initialized ~= false then return true end
      end
      return false
    end, 50)
    clients = clients_of(bufnr)
  end
  for _, c in pairs(clients) do
    local off = lsp_unsupported[c.id] or {}
    if c.name ~= 'agentls' and not off[params.method] then
      local resp = c.request_sync(params.method, p, 10000, bufnr)
      if resp and resp.err and resp.err.code == -32601 then
        off[params.method] = true
        lsp_unsupported[c.id] = off
      elseif resp and resp.err == nil and resp.result ~= nil and resp.result ~= vim.NIL then
        return resp.result
      end
    end
  end
  return vim.NIL
end

-- window/showMessage of agentls: at most one line, cut to the free width of
-- the command line (v:echospace), so it never stops the screen at "Press
-- ENTER" however long the server's text (a failed task's error). While a
-- task this plugin started runs, its reply shows the same result a moment
-- later: the message is kept, not echoed (two lines would scroll into
-- "Press ENTER"). The whole text stays available: M.last_message, the
-- answer float and agentls.result.
local function show_message(_, params)
  if type(params) ~= 'table' or params.message == nil then return vim.NIL end
  M.last_message = tostring(params.message)
  if next(runs) ~= nil then return vim.NIL end
  local room = vim.v.echospace
  if type(room) ~= 'number' or room <= 0 then room = vim.o.columns - 12 end
  local text = M.last_message
  if not text:match('^agentls') then text = 'agentls: ' .. text end
  -- One cell stays free: a message that fills the line scrolls.
  local hl = ({ 'ErrorMsg', 'WarningMsg' })[params.type] or 'None'
  vim.api.nvim_echo({ { ui.one_line(text, math.max(10, room - 1)), hl } }, true, {})
  return vim.NIL
end

-- agentls/answer: the answer as the model writes it, in the answer float
-- (agentls.stream); the task's reply replaces it.
local function answer_stream(_, params)
  if M.config.show_answer then stream.on_answer(params, { orphan = next(runs) == nil, split = M.config.view == 'split' }) end
  return vim.NIL
end

local function handlers()
  return {
    ['agentls/answer'] = answer_stream,
    ['window/showMessage'] = show_message,
    ['$/progress'] = progress_handler,
    ['window/showMessageRequest'] = show_message_request,
    ['$/cancelRequest'] = cancel_request,
    ['workspace/applyEdit'] = apply_edit,
    ['agentls/saveDocuments'] = save_documents,
    ['agentls/diagnostics'] = editor_diagnostics,
    ['agentls/lsp'] = forward_lsp,
  }
end
M._handlers = handlers

-- find_root: the deepest directory above the buffer holding a root marker,
-- else the buffer's directory.
local function find_root(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.fn.getcwd()
  local best = nil
  for _, marker in ipairs(M.config.root_markers) do
    local root
    local d = vim.fn.finddir(marker, dir .. ';')
    if d ~= '' then
      root = vim.fn.fnamemodify(d, ':p:h:h')
    else
      local f = vim.fn.findfile(marker, dir .. ';')
      if f ~= '' then root = vim.fn.fnamemodify(f, ':p:h') end
    end
    if root and (not best or #root > #best) then best = root end
  end
  return best or dir
end


local function cmd_env()
  if not M.config.api_key_cmd then return nil end
  local out = vim.fn.system(M.config.api_key_cmd)
  if vim.v.shell_error ~= 0 then
    log_notify('api_key_cmd failed (exit ' .. vim.v.shell_error .. ')', vim.log.levels.ERROR)
    return nil
  end
  return { OPENAI_API_KEY = vim.trim(out) }
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  caps.window.showMessage = caps.window.showMessage or { messageActionItem = { additionalPropertiesSupport = false } }
  caps.workspace = caps.workspace or {}
  caps.workspace.applyEdit = true
  -- Review before apply: the server annotates each hunk (needsConfirmation)
  -- and apply_edit asks for each.
  -- Versioned documentChanges (Neovim's handler applies them; 0.7 does not
  -- declare it) are where the server puts annotated edits.
  caps.workspace.workspaceEdit = caps.workspace.workspaceEdit or {}
  caps.workspace.workspaceEdit.documentChanges = true
  caps.workspace.workspaceEdit.changeAnnotationSupport = { groupsOnLabel = false }
  -- Ghost text (agentls.ghost) asks textDocument/inlineCompletion.
  if M.config.ghost and M.config.ghost.enabled ~= false then
    caps.textDocument = caps.textDocument or {}
    caps.textDocument.inlineCompletion = caps.textDocument.inlineCompletion or { dynamicRegistration = false }
  end
  -- The agentls/* requests this plugin answers (handlers()): the server
  -- sends them only to a client that lists them; agentls/answer: the
  -- answer streamed into the answer float (shown while config.show_answer
  -- is on, which may change after the client started).
  caps.experimental = caps.experimental or {}
  caps.experimental.agentls = {
    requests = { 'agentls/saveDocuments', 'agentls/diagnostics', 'agentls/lsp' },
    answerStream = true,
  }
  return caps
end

-- client_config: the vim.lsp client configuration for a root directory.
function M.client_config(root)
  local settings = M.server_settings(M.config.settings)
  return {
    name = 'agentls',
    cmd = M.config.cmd,
    cmd_env = cmd_env(),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = capabilities(),
    init_options = settings,
    settings = { agentls = settings },
    handlers = handlers(),
    on_exit = function(code, signal, client_id)
      vim.schedule(function() M._on_exit(code, signal, client_id) end)
    end,
    on_init = function(client)
      client.notify('workspace/didChangeConfiguration', { settings = { agentls = settings } })
    end,
  }
end

local clients_by_root = {}
local stopping = {} -- client id -> true when this plugin (or :LspStop) stopped it

-- log_file(): the server's log (its default place: the user's state folder).
function M.log_file()
  local state = vim.env.XDG_STATE_HOME
  if not state or state:sub(1, 1) ~= '/' then state = (vim.env.HOME or '') .. '/.local/state' end
  return state .. '/agentls/agentls.log'
end

-- last_log_line(): the last line of the server's log, cut to 200 characters.
function M.last_log_line()
  local ok, lines = pcall(vim.fn.readfile, M.log_file(), '', -1)
  if not ok or type(lines) ~= 'table' or not lines[1] or vim.trim(lines[1]) == '' then return nil end
  return ui.one_line(lines[1], 200)
end

-- stopped_message(code, signal): what the user reads when the server died.
function M.stopped_message(code, signal)
  local how = (signal and signal ~= 0) and ('killed by signal ' .. signal) or ('exit code ' .. tostring(code))
  local last = M.last_log_line()
  return 'agentls stopped (' .. how .. (last and (', last log line: ' .. last) or '') .. '); :AgentResume to continue'
end

-- _on_exit: the server of client_id exited. Its progress and tasks are
-- forgotten (the window and the statusline clear), the next command starts
-- a new server, and unless it was asked to stop the user is told, whole.
function M._on_exit(code, signal, client_id)
  for token, r in pairs(runs) do
    if r.client_id == client_id then runs[token] = nil end
  end
  for token, p in pairs(progress) do
    if p.client_id == client_id then progress[token] = nil end
  end
  for root, id in pairs(clients_by_root) do
    if id == client_id then clients_by_root[root] = nil end
  end
  if open_question then open_question.withdrawn = true end
  stream.close_all()
  M.refresh_progress()
  pcall(vim.cmd, 'redrawstatus')
  local asked = stopping[client_id]
  stopping[client_id] = nil
  if asked or (code == 0 and (signal or 0) == 0) then return end
  M.last_stop = M.stopped_message(code, signal)
  -- After Neovim's own "Client N quit with exit code ..." (scheduled too),
  -- and in a float as well: it says what to do, and must stay readable.
  vim.defer_fn(function()
    M.notify_whole(M.last_stop, vim.log.levels.ERROR)
    ui.notice(vim.split(M.last_stop, '\n', { plain = true }), 'ErrorMsg')
  end, 100)
end

-- notify_whole(text, level): a message shown whole: one line on the
-- command line (kept in :messages) and, when it does not fit, the whole
-- text in a float that stays until the next task starts or Insert mode.
-- Never a "Press ENTER" prompt.
function M.notify_whole(text, level)
  M.last_message = text
  local room = vim.v.echospace
  if type(room) ~= 'number' or room <= 0 then room = vim.o.columns - 12 end
  local hl = ({ [vim.log.levels.ERROR] = 'ErrorMsg', [vim.log.levels.WARN] = 'WarningMsg' })[level] or 'None'
  local line = ui.one_line(text, math.max(10, room - 1))
  vim.api.nvim_echo({ { line, hl } }, true, {})
  if line ~= text then ui.notice(vim.split(text, '\n', { plain = true }), hl) end
end

local function attachable(bufnr)
  if vim.api.nvim_buf_get_option(bufnr, 'buftype') ~= '' then return false end
  if vim.api.nvim_buf_get_name(bufnr) == '' then return false end
  local fts = M.config.filetypes
  if fts and not vim.tbl_contains(fts, vim.api.nvim_buf_get_option(bufnr, 'filetype')) then return false end
  return true
end

-- attach(bufnr): start (or reuse) the client of the buffer's root and attach.
-- Returns the client id, or nil when the buffer is not one agentls serves.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not attachable(bufnr) then return nil end
  local root = find_root(bufnr)
  local id = clients_by_root[root]
  if id then
    -- An initializing client is not "active" yet on 0.7, so ask the client
    -- itself rather than vim.lsp.client_is_stopped.
    local c = vim.lsp.get_client_by_id(id)
    if not c or (c.is_stopped and c.is_stopped()) then id = nil end
  end
  if not id and vim.lsp.start then
    -- 0.8+: vim.lsp.start reuses a client of the same name and root.
    id = vim.lsp.start(M.client_config(root), { bufnr = bufnr })
    if id then clients_by_root[root] = id end
    return id
  end
  if not id then
    id = vim.lsp.start_client(M.client_config(root))
    if not id then
      log_notify('could not start ' .. table.concat(M.config.cmd, ' '), vim.log.levels.ERROR)
      return nil
    end
    clients_by_root[root] = id
  end
  if not vim.lsp.buf_is_attached(bufnr, id) then vim.lsp.buf_attach_client(bufnr, id) end
  return id
end

-- client(bufnr): the agentls client attached to bufnr (or any, as fallback).
function M.client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  for _, c in pairs(get_clients({ bufnr = bufnr })) do
    if c.name == 'agentls' then return c end
  end
  for _, c in pairs(get_clients()) do
    if c.name == 'agentls' then return c end
  end
  return nil
end

local function need_client(bufnr)
  local c = M.client(bufnr)
  if not c then
    local id = M.attach(bufnr or 0)
    c = id and vim.lsp.get_client_by_id(id)
  end
  if not c then log_notify('no agentls client (is agentls on PATH?)', vim.log.levels.ERROR) end
  return c
end

local function result_message(r)
  local text = r.summary ~= nil and r.summary ~= vim.NIL and r.summary ~= '' and r.summary or (r.answer ~= vim.NIL and r.answer) or ''
  local files = ''
  if type(r.changedFiles) == 'table' and #r.changedFiles > 0 then files = ' (changed: ' .. table.concat(r.changedFiles, ', ') .. ')' end
  if r.status == 'completed' then
    return 'agentls: ' .. (text ~= '' and text or 'done') .. files, vim.log.levels.INFO
  end
  -- The server's summary already starts with the status ("cancelled after 2s ...").
  local word = r.status == 'cancelled' and 'cancelled' or 'failed'
  local level = r.status == 'cancelled' and vim.log.levels.WARN or vim.log.levels.ERROR
  if text:lower():sub(1, #word) == word then return 'agentls: task ' .. text .. files, level end
  return 'agentls: task ' .. word .. (text ~= '' and (': ' .. text) or '') .. files, level
end

-- run(args, opts): execute agentls.run with our own work-done token.
-- args: { prompt, mode?, uri?, range?, followUp? }; opts.bufnr, opts.on_done(err, result).
-- Returns the progress token.
function M.run(args, opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  if type(args) ~= 'table' or type(args.prompt) ~= 'string' or vim.trim(args.prompt) == '' then
    log_notify('a prompt is required', vim.log.levels.ERROR)
    return nil
  end
  local client = need_client(bufnr)
  if not client then return nil end
  args = vim.deepcopy(args)
  args.prompt = vim.trim(args.prompt)
  args.mode = args.mode or M.guess_mode(args.prompt)
  return M.run_command(M.commands.run, args, { prompt = args.prompt, mode = args.mode }, opts)
end

-- run_command(command, arg, meta, opts): a task command (agentls.run,
-- agentls.resume) with this plugin's work-done token; its reply is shown
-- like agentls.run's. Returns the token.
function M.run_command(command, args, meta, opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return nil end
  run_seq = run_seq + 1
  ui.notice(nil)
  local token = string.format('agentls-nvim-%d-%d', vim.fn.getpid(), run_seq)
  own_tokens[token] = true
  local params = { command = command, arguments = { args }, workDoneToken = token }
  local ok, request_id = client.request('workspace/executeCommand', params, function(err, result)
    runs[token] = nil
    if progress[token] then progress[token].done = true end
    M.refresh_progress()
    vim.cmd('redrawstatus')
    if err then
      -- No reply to replace the streamed answer with: close its float.
      if next(runs) == nil then stream.close_all() end
      -- A server that died is said once, by on_exit.
      local c = vim.lsp.get_client_by_id(client.id)
      if c and not (c.is_stopped and c.is_stopped()) then
        M.notify_whole('agentls: task failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
    elseif type(result) == 'table' then
      if type(result.taskId) == 'string' then stream.close(result.taskId) end
      if result.mode == nil and meta.mode then result.mode = meta.mode end
      last_result = result
      local msg, level = result_message(result)
      -- A cancelled task has nothing to read: its one line is enough.
      local shown = M.config.show_answer and not opts.quiet and result.status ~= 'cancelled'
      if M.config.notify then
        -- One display per failure: when the result float shows the whole
        -- error, the message line is its one-line echo (no second float
        -- that `q` on the first would leave open).
        if result.status == 'failed' and not shown then M.notify_whole(msg, level) else log_notify(ui.one_line(msg), level) end
      end
      if shown then M.show_result(result, client) end
    end
    if opts.on_done then opts.on_done(err, result) end
  end, bufnr)
  if not ok then
    log_notify('could not send ' .. command .. ' (client stopped?)', vim.log.levels.ERROR)
    return nil
  end
  runs[token] = { prompt = meta.prompt, client_id = client.id, request_id = request_id, bufnr = bufnr }
  return token
end

local function str(v) return (type(v) == 'string') and v or '' end

-- result_lines(r): the whole answer of a task as markdown lines, never cut.
function M.result_lines(r)
  local lines = { '# agentls task ' .. str(r.taskId) .. ': ' .. str(r.status), '' }
  if str(r.summary) ~= '' then
    table.insert(lines, str(r.summary))
    table.insert(lines, '')
  end
  if str(r.answer) ~= '' and r.answer ~= r.summary then
    vim.list_extend(lines, vim.split(r.answer, '\n', { plain = true }))
    table.insert(lines, '')
  end
  if type(r.plan) == 'table' and type(r.plan.items) == 'table' and #r.plan.items > 0 then
    table.insert(lines, '## Plan')
    for _, it in ipairs(r.plan.items) do
      local mark = ({ done = 'x', skipped = '-', in_progress = '>' })[it.status] or ' '
      table.insert(lines, string.format('- [%s] %s', mark, str(it.text)))
    end
    table.insert(lines, '')
  end
  if type(r.changedFiles) == 'table' and #r.changedFiles > 0 then
    table.insert(lines, 'Changed: ' .. table.concat(r.changedFiles, ', '))
  end
  if str(r.report) ~= '' then table.insert(lines, 'Report: ' .. vim.uri_to_fname(r.report)) end
  local keys = { 'q closes' }
  if r.mode == 'plan' and r.status == 'completed' then table.insert(keys, 'x executes the plan') end
  if str(r.report) ~= '' then table.insert(keys, 'r opens the report') end
  table.insert(lines, '')
  table.insert(lines, '_' .. table.concat(keys, ' · ') .. '_')
  return lines
end

-- show_result(r): the task's whole answer in a markdown float (or split).
-- A plan task gets the "Execute plan" action (`x`), any task with a report
-- `r`. Returns the buffer.
function M.show_result(r, client)
  local keys = {}
  if r.mode == 'plan' and r.status == 'completed' then keys.x = function() M.execute_plan(r.taskId) end end
  if str(r.report) ~= '' then keys.r = function() M.open_report_file(r.report) end end
  local b = ui.show('task-' .. str(r.taskId), M.result_lines(r), { split = M.config.view == 'split', keys = keys })
  return b
end

-- supports(command): whether the server advertises a command.
function M.supports(command, client)
  client = client or M.client()
  local ecp = client and client.server_capabilities and client.server_capabilities.executeCommandProvider
  return type(ecp) == 'table' and vim.tbl_contains(ecp.commands or {}, command)
end

local function exec(command, arg, cb)
  local client = need_client()
  if not client then return end
  client.request('workspace/executeCommand', { command = command, arguments = arg and { arg } or {} }, function(err, result)
    if err then
      log_notify(ui.one_line(command .. ' failed: ' .. (err.message or vim.inspect(err))), vim.log.levels.ERROR)
      return
    end
    cb(result, client)
  end)
end

local function buf_uri(bufnr) return vim.uri_from_bufnr(bufnr) end

-- range_of(bufnr, line1, line2, visual): the LSP range of a command range.
local function range_of(client, line1, line2, visual)
  if visual then
    local enc = client.offset_encoding or 'utf-16'
    local s = vim.api.nvim_buf_get_mark(0, '<')
    local e = vim.api.nvim_buf_get_mark(0, '>')
    local params = vim.lsp.util.make_given_range_params({ s[1], s[2] }, { e[1], e[2] }, 0, enc)
    return params.range
  end
  local last = vim.api.nvim_buf_get_lines(0, line2 - 1, line2, false)[1] or ''
  local enc2 = client.offset_encoding or 'utf-16'
  return { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2 - 1, character = col_to_lsp(last, #last, enc2) } }
end

function M.cmd_run(o)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local args = { prompt = o.args, uri = buf_uri(bufnr) }
  if o.range and o.range > 0 then args.range = range_of(client, o.line1, o.line2, false) end
  return M.run(args, { bufnr = bufnr })
end

function M.cmd_ask(o)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local enc = client.offset_encoding or 'utf-16'
  local range, subject
  if o.range and o.range > 0 then
    range = range_of(client, o.line1, o.line2, o.range == 2 and vim.fn.visualmode() ~= '')
    subject = 'the selected code'
  else
    local word = vim.fn.expand('<cword>')
    if word == '' then
      log_notify('put the cursor on a symbol or select code', vim.log.levels.WARN)
      return
    end
    -- The symbol's range: search the word around the cursor on this line.
    local row, col = unpack(vim.api.nvim_win_get_cursor(0))
    local line = vim.api.nvim_get_current_line()
    local s = 1
    local from, to
    while true do
      local a, b = line:find(word, s, true)
      if not a then break end
      if a - 1 <= col and col < b then from, to = a - 1, b; break end
      s = b + 1
    end
    from, to = from or col, to or col
    range = { start = { line = row - 1, character = col_to_lsp(line, from, enc) }, ['end'] = { line = row - 1, character = col_to_lsp(line, to, enc) } }
    subject = '`' .. word .. '`'
  end
  local prompt = (o.args and vim.trim(o.args) ~= '') and o.args or ('Explain ' .. subject .. '.')
  return M.run({ prompt = prompt, mode = 'ask', uri = buf_uri(bufnr), range = range }, { bufnr = bufnr })
end

-- cancel(task_id?): cancel a task by id (agentls.cancel) or, without an id,
-- this editor's most recent running task (window/workDoneProgress/cancel).
function M.cancel(task_id)
  local client = need_client()
  if not client then return false end
  if task_id and task_id ~= '' then
    client.request('workspace/executeCommand', { command = M.commands.cancel, arguments = { { taskId = task_id } } }, function(err)
      if err then log_notify('cancel failed: ' .. (err.message or ''), vim.log.levels.ERROR) end
    end)
    return true
  end
  local newest, newest_token = -1, nil
  for token, _ in pairs(runs) do
    local n = tonumber(token:match('(%d+)$')) or 0
    if n > newest then newest, newest_token = n, token end
  end
  if not newest_token then
    log_notify('no task of this editor is running (:AgentTasks lists all)', vim.log.levels.WARN)
    return false
  end
  local owner = vim.lsp.get_client_by_id(runs[newest_token].client_id)
  if not owner or (owner.is_stopped and owner.is_stopped()) then
    runs[newest_token] = nil
    M.notify_whole(M.last_stop or 'agentls stopped; :AgentResume to continue', vim.log.levels.WARN)
    return false
  end
  owner.notify('window/workDoneProgress/cancel', { token = newest_token })
  return true
end

-- tasks(cb): agentls.tasks; cb(err, list) where list is the reply's tasks.
function M.tasks(cb)
  local client = need_client()
  if not client then return end
  client.request('workspace/executeCommand', { command = M.commands.tasks, arguments = {} }, function(err, result)
    local list = result
    if type(result) == 'table' and result.tasks then list = result.tasks end
    cb(err, type(list) == 'table' and list or {})
  end)
end

-- plan_progress(p): "2/3" from agentls.tasks' plan {done, total}; '' without a plan.
function M.plan_progress(p)
  if type(p) == 'table' and type(p.done) == 'number' and type(p.total) == 'number' then
    return p.total > 0 and string.format('%d/%d', p.done, p.total) or ''
  end
  if type(p) == 'string' then return p end
  return ''
end

-- duration_text(ms): agentls.tasks gives milliseconds (so far, when running).
function M.duration_text(ms)
  if type(ms) ~= 'number' then return '' end
  local s = ms / 1000
  if s < 60 then return string.format('%.1f s', s) end
  return string.format('%d min %d s', math.floor(s / 60), math.floor(s % 60 + 0.5))
end

-- task_state(t): the state of an agentls.tasks entry; a task an earlier
-- server left running reads "interrupted", one whose edits were undone
-- "undone".
function M.task_state(t)
  if t.interrupted == true then return 'interrupted' end
  if t.undone == true then return 'undone' end
  return str(t.state) ~= '' and t.state or str(t.status)
end

function M.task_lines(list)
  local lines = { '# agentls tasks', '' }
  for _, t in ipairs(list) do
    table.insert(lines, string.format('- `%s` %-11s %-5s %8s  %s', t.id or t.taskId or '?', M.task_state(t),
      M.plan_progress(t.plan or t.progress), M.duration_text(t.duration), ui.one_line(str(t.prompt), 70)))
  end
  table.insert(lines, '')
  table.insert(lines, '_q closes · :AgentReport ID · :AgentUndo ID · :AgentResume ID_')
  return lines
end

function M.cmd_tasks()
  M.tasks(function(err, list)
    if err then return log_notify(ui.one_line('agentls.tasks failed: ' .. (err.message or '')), vim.log.levels.ERROR) end
    if #list == 0 then return log_notify('agentls: no tasks yet') end
    ui.show('tasks', M.task_lines(list), { split = M.config.view == 'split' })
  end)
end

-- task_ids(): ids of the server's tasks, newest first, for completion
-- (a synchronous request of at most a second).
function M.task_ids()
  local client = M.client()
  if not client then return {} end
  local resp = client.request_sync('workspace/executeCommand', { command = M.commands.tasks, arguments = {} }, 1000)
  local list = resp and resp.result
  if type(list) == 'table' and list.tasks then list = list.tasks end
  local ids = {}
  for _, t in ipairs(type(list) == 'table' and list or {}) do table.insert(ids, t.id or t.taskId) end
  return ids
end

function M.complete_task_ids(arglead)
  return vim.tbl_filter(function(id) return vim.startswith(id, arglead or '') end, M.task_ids())
end

function M.open_report_file(uri)
  local name = vim.uri_to_fname(uri)
  vim.cmd('botright split ' .. vim.fn.fnameescape(name))
  vim.bo.readonly = true
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = 0, nowait = true })
end

-- report(task_id?): a task's whole answer and report (the last finished
-- task by default), any task agentls.tasks lists, earlier sessions too.
function M.report(task_id)
  local r = last_result
  task_id = (task_id and task_id ~= '') and task_id or (r and r.taskId)
  if not task_id then return log_notify('agentls: no task has finished yet (:AgentTasks lists all)', vim.log.levels.WARN) end
  if M.supports(M.commands.result) then
    return exec(M.commands.result, { taskId = task_id }, function(res, client) M.show_result(res, client) end)
  end
  -- A server without agentls.result: its markdown report file.
  exec(M.commands.show_report, { taskId = task_id }, function(result)
    local uri = type(result) == 'table' and str(result.report) or ''
    if uri ~= '' and not result.shown then M.open_report_file(uri) end
  end)
end

local function newest_task(pred, cb)
  M.tasks(function(err, list)
    if err then return cb(nil) end
    for _, t in ipairs(list) do
      if pred(t) then return cb(t.id or t.taskId) end
    end
    cb(nil)
  end)
end

-- undo(task_id?): revert every edit of a task (this editor's last task that
-- changed files by default).
function M.undo(task_id)
  local function go(id)
    if not id then return log_notify('agentls: no task to undo (:AgentTasks lists them)', vim.log.levels.WARN) end
    exec(M.commands.undo, { taskId = id }, function(res)
      last_undo = res
      log_notify(ui.one_line('agentls: ' .. (type(res) == 'table' and str(res.summary) or 'undone')))
    end)
  end
  if task_id and task_id ~= '' then return go(task_id) end
  local r = last_result
  if r and type(r.changedFiles) == 'table' and #r.changedFiles > 0 then return go(r.taskId) end
  newest_task(function(t) return M.task_state(t) == 'completed' and t.mode == 'edit' end, go)
end

-- resume(task_id?): continue an interrupted task (the newest by default).
function M.resume(task_id)
  local function go(id)
    if not id then return log_notify('agentls: no interrupted task to resume', vim.log.levels.WARN) end
    M.run_command(M.commands.resume, { taskId = id }, { prompt = 'resume ' .. id })
  end
  if task_id and task_id ~= '' then return go(task_id) end
  newest_task(function(t) return M.task_state(t) == 'interrupted' end, go)
end

-- plan(prompt): a read-only task that ends with a plan; its answer window
-- offers "Execute plan" (`x`, or :AgentExecute).
function M.plan(prompt, bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  return M.run({ prompt = prompt, mode = 'plan', uri = vim.uri_from_bufnr(bufnr) }, { bufnr = bufnr })
end

-- execute_plan(task_id?): run the plan of a plan task (the last by default).
function M.execute_plan(task_id)
  local r = last_result
  task_id = (task_id and task_id ~= '') and task_id or (r and r.mode == 'plan' and r.taskId)
  if not task_id then return log_notify('agentls: no plan to execute (:AgentPlan first)', vim.log.levels.WARN) end
  return M.run({ prompt = 'go ahead', mode = 'edit', followUp = task_id })
end

-- register_lspconfig(): add "agentls" to nvim-lspconfig when it is installed,
-- so `require('lspconfig').agentls.setup{}` works. Returns true when done.
function M.register_lspconfig()
  local ok, configs = pcall(require, 'lspconfig.configs')
  if not ok then return false end
  if not configs.agentls then
    local util = require('lspconfig.util')
    local settings = M.server_settings(M.config.settings)
    configs.agentls = {
      default_config = {
        cmd = M.config.cmd,
        filetypes = M.config.filetypes,
        root_dir = util.root_pattern(unpack(M.config.root_markers)),
        single_file_support = true,
        init_options = settings,
        settings = { agentls = settings },
        capabilities = capabilities(),
        handlers = handlers(),
      },
      docs = { description = 'agentls: a coding agent as a language server. https://github.com/agentls/agentls' },
    }
  end
  return true
end

-- The code action "Ask agent about X" carries the command agentls.run: run it
-- through M.run so it gets progress and the result message.
local function register_client_commands()
  vim.lsp.commands = vim.lsp.commands or {}
  vim.lsp.commands[M.commands.run] = function(command, ctx)
    local args = command.arguments and command.arguments[1] or nil
    M.run(args, { bufnr = ctx and ctx.bufnr })
  end
end

-- setup(opts): configure; with autostart, attach to buffers as they open.
-- ensure_helptags(): :help agentls works even when doc/tags is not there
-- (a plugin manager that skips it); a read-only directory is left alone.
function M.ensure_helptags()
  for _, doc in ipairs(vim.api.nvim_get_runtime_file('doc/agentls.txt', true)) do
    local dir = vim.fn.fnamemodify(doc, ':h')
    if vim.fn.filereadable(dir .. '/tags') == 0 and vim.fn.filewritable(dir) == 2 then
      pcall(vim.cmd, 'silent! helptags ' .. vim.fn.fnameescape(dir))
    end
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  track_published_versions()
  M.ensure_helptags()
  register_client_commands()
  ghost.setup(M.config.ghost)
  local lspconfig = M.register_lspconfig()
  local group = vim.api.nvim_create_augroup('agentls', { clear = true })
  if M.config.autostart and not (lspconfig and opts and opts.use_lspconfig) then
    vim.api.nvim_create_autocmd({ 'FileType', 'BufEnter' }, {
      group = group,
      callback = function(ev) M.attach(ev.buf) end,
    })
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) then M.attach(b) end
    end
  end
  M._setup_done = true
  return M
end

M._has = has
return M
