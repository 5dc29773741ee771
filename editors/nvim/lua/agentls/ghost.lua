-- Ghost text: the server's inline completion (LSP 3.18
-- textDocument/inlineCompletion) shown after the cursor in Insert mode, on
-- Neovim 0.7 and newer (extmarks: virt_text overlay, inline on 0.10+, and
-- virt_lines for the lines after the first). See :help agentls-ghost.
--
-- Quiet until useful: it asks only after the user pauses typing (debounce),
-- only servers that advertise inlineCompletionProvider, one request at a
-- time (a new one cancels the one before), and drops an answer when the
-- buffer or the cursor moved on since it asked. Any keystroke clears it.
local M = {}

local ns = vim.api.nvim_create_namespace('agentls_ghost')
local method = 'textDocument/inlineCompletion'

M.defaults = {
  -- false: never ask for ghost text (Neovim 0.12's own
  -- vim.lsp.inline_completion may then show the server's completions).
  enabled = true,
  -- How long the user pauses before the server is asked (ms). The server
  -- waits its own completion.debounceMs on top for automatic requests.
  debounce_ms = 150,
  -- Insert-mode keys; false leaves a key unmapped. Each is mapped only when
  -- it is free (no Insert-mode mapping of the user's or another plugin's):
  -- a taken <Tab> stays the other plugin's, and require('agentls.ghost').accept()
  -- (true when it accepted) can be called from that mapping.
  keys = {
    accept = '<Tab>',
    next = '<M-]>',
    prev = '<M-[>',
    dismiss = '<C-]>',
    trigger = '<M-\\>',
  },
}

M.config = vim.deepcopy(M.defaults)

local has_inline = vim.fn.has('nvim-0.10') == 1

-- cur: the ghost text shown now: { bufnr, row (0-based), col (byte),
-- tick, items = { { text, start_col, end_col } }, index }.
local cur = nil
-- pending: the request in flight: { client, id, seq }.
local pending = nil
local seq = 0
local timer = nil

local function agentls() return require('agentls') end

-- _in_insert(): whether Neovim is in Insert mode (replaced by the
-- headless test, which cannot be).
function M._in_insert() return vim.api.nvim_get_mode().mode:sub(1, 1) == 'i' end

-- What became of the answers: shown, or dropped (stale, empty).
M.stats = { shown = 0, dropped = 0 }

-- col_to_lsp / lsp_to_col: a byte column of line in the client's offset
-- encoding, and back.
local function col_to_lsp(line, col, enc)
  if enc == 'utf-8' then return col end
  local ok, u32, u16 = pcall(vim.str_utfindex, line, col)
  if not ok then return col end
  return enc == 'utf-32' and u32 or u16
end

local function lsp_to_col(line, character, enc)
  if enc == 'utf-8' then return math.min(character, #line) end
  local ok, col = pcall(vim.str_byteindex, line, character, enc == 'utf-16')
  if not ok then return #line end
  return col
end

-- client_of(bufnr): the agentls client of bufnr when it serves inline
-- completion.
local function client_of(bufnr)
  local c = agentls().client(bufnr)
  if not c or not vim.lsp.buf_is_attached(bufnr, c.id) then return nil end
  local caps = c.server_capabilities or (c.resolved_capabilities or {})
  if not caps.inlineCompletionProvider then return nil end
  return c
end

function M.visible() return cur ~= nil end
function M.current()
  if not cur then return nil end
  return { bufnr = cur.bufnr, row = cur.row, col = cur.col, text = cur.items[cur.index].text,
    index = cur.index, count = #cur.items }
end

local function stop_timer()
  if timer then
    timer:stop()
  end
end

local function cancel_pending()
  if pending then
    pcall(pending.client.cancel_request, pending.id)
    pending = nil
  end
end

-- clear(): removes the ghost text (not the request in flight).
function M.clear()
  if cur and vim.api.nvim_buf_is_valid(cur.bufnr) then
    vim.api.nvim_buf_clear_namespace(cur.bufnr, ns, 0, -1)
  end
  cur = nil
end

-- dismiss(): no ghost text and nothing asked until the next keystroke.
function M.dismiss()
  stop_timer()
  cancel_pending()
  M.clear()
end

local function render()
  vim.api.nvim_buf_clear_namespace(cur.bufnr, ns, 0, -1)
  local item = cur.items[cur.index]
  local line = vim.api.nvim_buf_get_lines(cur.bufnr, cur.row, cur.row + 1, false)[1] or ''
  local ghost = vim.split(item.shown, '\n', { plain = true })
  -- The rest of the line after what the item replaces: it follows the
  -- ghost's last line once accepted.
  local rest = line:sub(item.end_col + 1)
  local opts = { hl_mode = 'combine' }
  local hl = 'AgentlsGhost'
  if has_inline then
    opts.virt_text_pos = 'inline'
    opts.virt_text = { { ghost[1], hl } }
  else
    -- 0.7-0.9: overlay from the cursor, covering the rest of the line:
    -- the ghost's first line, then (one line) the rest as it will read.
    local first = { { ghost[1], hl } }
    local covered = vim.fn.strdisplaywidth(line:sub(cur.col + 1))
    if #ghost == 1 and rest ~= '' then table.insert(first, { rest, 'Normal' }) end
    local width = 0
    for _, chunk in ipairs(first) do width = width + vim.fn.strdisplaywidth(chunk[1]) end
    if width < covered then table.insert(first, { string.rep(' ', covered - width), 'Normal' }) end
    opts.virt_text_pos = 'overlay'
    opts.virt_text = first
  end
  if #ghost > 1 then
    local lines = {}
    for i = 2, #ghost do
      local l = { { ghost[i], hl } }
      if i == #ghost and rest ~= '' then table.insert(l, { rest, 'Normal' }) end
      table.insert(lines, l)
    end
    opts.virt_lines = lines
  end
  vim.api.nvim_buf_set_extmark(cur.bufnr, ns, cur.row, cur.col, opts)
end

-- items_of(result, line, col, enc, row): the answer's items as ghost
-- texts at the cursor: { text (inserted whole), shown (what is not typed
-- yet), start_col, end_col }. An item whose range leaves the cursor's line,
-- or whose text does not start with what its range already holds, is left
-- out (the user typed past it).
local function items_of(result, line, col, enc, row)
  local list = result
  if type(result) == 'table' and result.items then list = result.items end
  local out, seen = {}, {}
  for _, it in ipairs(type(list) == 'table' and list or {}) do
    local text = it.insertText
    if type(text) == 'table' then text = text.value end
    if type(text) == 'string' and text ~= '' then
      local start_col, end_col = col, col
      local r = it.range
      local ok = true
      if type(r) == 'table' and r.start and r['end'] then
        if r.start.line ~= row or r['end'].line ~= row then
          ok = false
        else
          start_col = lsp_to_col(line, r.start.character, enc)
          end_col = math.max(col, lsp_to_col(line, r['end'].character, enc))
          if start_col > col then ok = false end
        end
      end
      if ok then
        local typed = line:sub(start_col + 1, col)
        if text:sub(1, #typed) == typed then
          local shown = text:sub(#typed + 1)
          if shown ~= '' and not seen[text] then
            seen[text] = true
            table.insert(out, { text = text, shown = shown, start_col = start_col, end_col = end_col })
          end
        end
      end
    end
  end
  return out
end

-- request(kind): asks the server at the cursor (kind 1 Invoked, 2
-- Automatic). The answer is shown only if the buffer, the cursor and the
-- mode are still those of the request.
function M.request(kind)
  if not M.config.enabled or not M._in_insert() then return end
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_of(bufnr)
  if not client then return end
  cancel_pending()
  local cursor = vim.api.nvim_win_get_cursor(0)
  local row, col = cursor[1] - 1, cursor[2]
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  local enc = client.offset_encoding or 'utf-16'
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = row, character = col_to_lsp(line, col, enc) },
    context = { triggerKind = kind or 2 },
  }
  seq = seq + 1
  local req = { seq = seq, bufnr = bufnr, tick = vim.api.nvim_buf_get_changedtick(bufnr), row = row, col = col,
    line = line, enc = enc }
  local ok, id = client.request(method, params, function(err, result) M._answer(req, err, result) end, bufnr)
  if ok and id then pending = { client = client, id = id, seq = req.seq } end
end

-- _answer(req, err, result): the answer to the request req ({ seq, bufnr,
-- tick, row, col, line, enc }) is shown only when it is the last request
-- and the buffer (its changedtick), the cursor and the mode are still
-- those it asked at. Returns what became of it ('shown' or why not).
function M._answer(req, err, result)
  if pending and pending.seq == req.seq then pending = nil end
  local why
  if req.seq ~= seq then
    why = 'a newer request'
  elseif err or result == nil then
    why = 'no answer'
  elseif vim.api.nvim_get_current_buf() ~= req.bufnr or not M._in_insert() then
    why = 'left the buffer or Insert mode'
  elseif vim.api.nvim_buf_get_changedtick(req.bufnr) ~= req.tick then
    why = 'the buffer changed'
  else
    local now = vim.api.nvim_win_get_cursor(0)
    if now[1] - 1 ~= req.row or now[2] ~= req.col then why = 'the cursor moved' end
  end
  local items = why == nil and items_of(result, req.line, req.col, req.enc, req.row) or {}
  if why == nil and #items == 0 then why = 'nothing to show' end
  if why then
    M.stats.dropped = M.stats.dropped + 1
    return why
  end
  M.clear()
  cur = { bufnr = req.bufnr, row = req.row, col = req.col, tick = req.tick, items = items, index = 1 }
  render()
  M.stats.shown = M.stats.shown + 1
  return 'shown'
end

-- schedule(): the user typed: ask once they pause.
local function schedule()
  if not M.config.enabled then return end
  if not timer then timer = vim.loop.new_timer() end
  timer:stop()
  timer:start(M.config.debounce_ms or 150, 0, vim.schedule_wrap(function() M.request(2) end))
end

-- accept(): inserts the ghost text shown; true when there was one.
function M.accept()
  if not cur then return false end
  local c = cur
  local item = c.items[c.index]
  if not vim.api.nvim_buf_is_valid(c.bufnr) or vim.api.nvim_buf_get_changedtick(c.bufnr) ~= c.tick then
    M.dismiss()
    return false
  end
  M.dismiss()
  local lines = vim.split(item.text, '\n', { plain = true })
  vim.api.nvim_buf_set_text(c.bufnr, c.row, item.start_col, c.row, item.end_col, lines)
  local end_row = c.row + #lines - 1
  local end_col = (#lines == 1 and item.start_col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { end_row + 1, end_col })
  return true
end

-- cycle(step): the next (1) or previous (-1) of the answer's items.
function M.cycle(step)
  if not cur then
    M.request(1)
    return
  end
  cur.index = (cur.index - 1 + step) % #cur.items + 1
  render()
end

local function map(key, fn, fallback)
  if not key or key == false then return end
  if vim.fn.maparg(key, 'i') ~= '' then return end
  vim.keymap.set('i', key, function()
    if fallback and not cur then return fallback end
    return '<Cmd>lua require("agentls.ghost").' .. fn .. '<CR>'
  end, { expr = true, silent = true, desc = 'agentls ghost text: ' .. fn })
end

-- setup(opts): the highlight, the keys and the autocmds.
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  vim.cmd('highlight default link AgentlsGhost Comment')
  local group = vim.api.nvim_create_augroup('agentls_ghost', { clear = true })
  M.dismiss()
  if not M.config.enabled then return end
  local keys = M.config.keys or {}
  -- Tab with nothing shown is a Tab.
  map(keys.accept, 'accept()', keys.accept)
  map(keys.next, 'cycle(1)')
  map(keys.prev, 'cycle(-1)')
  map(keys.dismiss, 'dismiss()', keys.dismiss)
  map(keys.trigger, 'request(1)')
  vim.api.nvim_create_autocmd('TextChangedI', {
    group = group,
    callback = function()
      M.clear()
      cancel_pending()
      if client_of(vim.api.nvim_get_current_buf()) then schedule() end
    end,
  })
  vim.api.nvim_create_autocmd('CursorMovedI', {
    group = group,
    callback = function()
      if not cur then return end
      local now = vim.api.nvim_win_get_cursor(0)
      if vim.api.nvim_get_current_buf() ~= cur.bufnr or now[1] - 1 ~= cur.row or now[2] ~= cur.col then M.clear() end
    end,
  })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave', 'TextChangedP' }, {
    group = group,
    callback = function() M.dismiss() end,
  })
end

M._items_of = items_of
return M
