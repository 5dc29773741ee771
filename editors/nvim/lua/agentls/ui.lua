-- agentls.ui: the plugin's windows. Nothing here blocks the screen: every
-- view is a floating window (or a split), never a multi-line message that
-- would stop Neovim at "Press ENTER or type command to continue".
local M = {}

local api = vim.api

-- one_line(text, max): text on one line that fits the command line, so
-- vim.notify / echo never asks for ENTER.
function M.one_line(text, max)
  text = tostring(text or ''):gsub('%s*\n%s*', ' · '):gsub('%s+$', '')
  max = max or math.max(20, vim.o.columns - 15)
  if vim.fn.strdisplaywidth(text) > max then
    text = vim.fn.strcharpart(text, 0, max - 1) .. '…'
  end
  return text
end

local function close_win(win)
  if win and api.nvim_win_is_valid(win) then pcall(api.nvim_win_close, win, true) end
end

local function scratch(lines, ft)
  local b = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  api.nvim_buf_set_option(b, 'bufhidden', 'wipe')
  api.nvim_buf_set_option(b, 'modifiable', false)
  if ft then api.nvim_buf_set_option(b, 'filetype', ft) end
  return b
end

-- Progress window: a small float in the top right corner, replaced on every
-- update and closed when no task runs. It is never focused.
local progress_win, progress_buf

function M.progress(lines)
  if not lines or #lines == 0 then
    close_win(progress_win)
    progress_win = nil
    return
  end
  local width = 10
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
  width = math.min(width, math.max(20, math.floor(vim.o.columns * 0.5)))
  local height = math.min(#lines, math.max(1, vim.o.lines - 4))
  if not (progress_buf and api.nvim_buf_is_valid(progress_buf)) then
    progress_buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_option(progress_buf, 'bufhidden', 'hide')
  end
  api.nvim_buf_set_lines(progress_buf, 0, -1, false, lines)
  local cfg = { relative = 'editor', anchor = 'NE', row = 1, col = vim.o.columns, width = width, height = height,
    style = 'minimal', focusable = false, border = 'single', zindex = 60 }
  if progress_win and api.nvim_win_is_valid(progress_win) then
    api.nvim_win_set_config(progress_win, cfg)
  else
    progress_win = api.nvim_open_win(progress_buf, false, cfg)
    api.nvim_win_set_option(progress_win, 'winhl', 'Normal:Normal,FloatBorder:Comment')
  end
end

function M.progress_lines()
  if progress_win and api.nvim_win_is_valid(progress_win) then
    return api.nvim_buf_get_lines(progress_buf, 0, -1, false)
  end
  return nil
end

-- notice(lines, hl): a message too long for the command line, whole, in a
-- float at the bottom right (wrapped, never focused); nil closes it. It
-- stays until the next task starts or Insert mode.
local notice_win
function M.notice(lines, hl)
  close_win(notice_win)
  notice_win = nil
  if not lines or #lines == 0 then return end
  local width = math.max(20, math.min(math.floor(vim.o.columns * 0.6), 100))
  local height = 0
  for _, l in ipairs(lines) do height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / width)) end
  height = math.min(height, math.max(1, math.floor(vim.o.lines / 2)))
  local b = scratch(lines, nil)
  notice_win = api.nvim_open_win(b, false, { relative = 'editor', anchor = 'SE', row = vim.o.lines - 2, col = vim.o.columns,
    width = width, height = height, style = 'minimal', focusable = false, border = 'single', zindex = 70 })
  api.nvim_win_set_option(notice_win, 'wrap', true)
  api.nvim_win_set_option(notice_win, 'winhl', 'Normal:' .. (hl or 'Normal') .. ',FloatBorder:Comment')
  local win = notice_win
  vim.cmd(string.format('autocmd InsertEnter * ++once lua pcall(vim.api.nvim_win_close, %d, true)', win))
end

function M.notice_lines()
  if notice_win and api.nvim_win_is_valid(notice_win) then
    return api.nvim_buf_get_lines(api.nvim_win_get_buf(notice_win), 0, -1, false)
  end
  return nil
end

-- show(title, lines, opts): the whole text in a focused markdown float
-- (opts.split: in a split instead). `q` and <Esc> close it; opts.keys adds
-- mappings { key = function() end }. Returns the buffer and window.
function M.show(title, lines, opts)
  opts = opts or {}
  local b = scratch(lines, 'markdown')
  pcall(api.nvim_buf_set_name, b, 'agentls://' .. title:gsub('[^%w%-_.]', '-') .. '/' .. b)
  local win
  if opts.split then
    vim.cmd('botright split')
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, b)
    api.nvim_win_set_height(win, math.min(#lines + 1, math.floor(vim.o.lines / 2)))
  else
    local width = 20
    for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
    width = math.min(width, math.floor(vim.o.columns * 0.8), 100)
    -- Height of the wrapped text, so its last line is on the screen.
    local height = 0
    for _, l in ipairs(lines) do height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / width)) end
    height = math.max(1, math.min(height, vim.o.lines - 6))
    win = api.nvim_open_win(b, true, {
      relative = 'editor', row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
      col = math.floor((vim.o.columns - width) / 2), width = width, height = height,
      style = 'minimal', border = 'rounded', zindex = 50,
    })
    api.nvim_win_set_option(win, 'wrap', true)
    api.nvim_win_set_option(win, 'linebreak', true)
    api.nvim_win_set_option(win, 'winhl', 'Normal:Normal,FloatBorder:Comment')
  end
  api.nvim_win_set_option(win, 'conceallevel', 2)
  local close = function() close_win(win) end
  for _, k in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', k, close, { buffer = b, nowait = true, desc = 'agentls: close' })
  end
  for k, fn in pairs(opts.keys or {}) do
    vim.keymap.set('n', k, function() close(); fn() end, { buffer = b, nowait = true })
  end
  return b, win
end

-- pick(prompt_lines, items, opts) -> index or nil: a modal floating picker
-- that runs inside a synchronous LSP request handler (Neovim's vim.lsp
-- answers server requests with the handler's return value, so an async
-- picker such as telescope cannot answer it). Keys: j/k or arrows move,
-- <CR> chooses, 1-9 choose directly. <Esc>, q and an empty answer do not
-- choose: they say so and ask again. `c` calls opts.on_cancel() (cancel
-- the task; the server then withdraws the question). opts.withdrawn() -> true closes the
-- picker with nil (the server withdrew the question).
function M.pick(prompt_lines, items, opts)
  opts = opts or {}
  local lines = vim.deepcopy(prompt_lines)
  table.insert(lines, '')
  local first = #lines + 1
  for i, it in ipairs(items) do table.insert(lines, string.format(' %d. %s', i, it)) end
  table.insert(lines, '')
  table.insert(lines, ' <CR> choose · 1-' .. #items .. ' · j/k move' .. (opts.on_cancel and ' · c cancels the task' or ''))
  local hint_line = #lines
  local width = 30
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
  width = math.min(width, vim.o.columns - 4)
  local height = 0
  for _, l in ipairs(lines) do height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / width)) end
  height = math.min(height, vim.o.lines - 4)
  local b = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  api.nvim_buf_set_option(b, 'bufhidden', 'wipe')
  local win = api.nvim_open_win(b, false, {
    relative = 'editor', row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2), width = width, height = height,
    style = 'minimal', border = 'double', zindex = 70,
  })
  api.nvim_win_set_option(win, 'wrap', true)
  api.nvim_win_set_option(win, 'cursorline', true)
  api.nvim_win_set_option(win, 'winhl', 'Normal:Normal,FloatBorder:WarningMsg')
  local ns = api.nvim_create_namespace('agentls_pick')
  local sel = 1
  local function draw()
    api.nvim_win_set_cursor(win, { first + sel - 1, 0 })
    api.nvim_buf_clear_namespace(b, ns, 0, -1)
    api.nvim_buf_add_highlight(b, ns, 'PmenuSel', first + sel - 2, 0, -1)
    vim.cmd('redraw')
  end
  local function hint(text)
    api.nvim_buf_set_lines(b, hint_line - 1, hint_line, false, { ' ' .. text })
  end
  draw()
  local choice
  local done = false
  local keys = { j = 1, k = -1, ['\14'] = 1, ['\16'] = -1 } -- <C-n>, <C-p>
  while not done do
    vim.wait(1000000, function()
      if opts.withdrawn and opts.withdrawn() then done = true return true end
      local c = vim.fn.getchar(0)
      if c == 0 then return false end
      local k = type(c) == 'number' and vim.fn.nr2char(c) or c
      if k == '\r' or k == '\n' then
        choice = sel
        done = true
      elseif k:match('^%d$') and tonumber(k) >= 1 and tonumber(k) <= #items then
        choice = tonumber(k)
        done = true
      elseif keys[k] then
        sel = (sel - 1 + keys[k]) % #items + 1
        draw()
      elseif k == '\128kd' then
        sel = sel % #items + 1
        draw()
      elseif k == '\128ku' then
        sel = (sel - 2) % #items + 1
        draw()
      elseif k == 'c' and opts.on_cancel then
        opts.on_cancel()
        hint('cancelling the task…')
        draw()
      elseif k == '\27' or k == 'q' then
        hint('choose an action: Esc does not answer (Deny is an action)')
        draw()
      end
      return done
    end, 20)
  end
  close_win(win)
  vim.cmd('redraw')
  return choice
end

return M
