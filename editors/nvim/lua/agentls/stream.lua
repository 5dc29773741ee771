-- agentls.stream: a task's answer as the model writes it. The server sends
-- it in agentls/answer notifications ({ taskId, text, done? }, each text a
-- part to append) to clients that declare
-- capabilities.experimental.agentls.answerStream. The answer float opens at
-- the first part, unfocused (typing goes on in the buffer), grows as parts
-- arrive and keeps its last line in view; the task's reply then replaces it
-- with the whole answer (M.close, then the plugin's answer float). With
-- view = 'split' the answer streams into a split at the bottom instead,
-- unfocused too, that grows up to half the screen.
local M = {}

local api = vim.api

-- streams: taskId -> { text, buf, win, split, closed (the user closed the window), done }
local streams = {}

-- lines(task_id, s): what the float shows.
function M.lines(task_id, s)
  local head = '# agentls task ' .. task_id .. ': ' .. (s.done and 'answer written' or 'writing the answer…')
  local lines = { head, '' }
  vim.list_extend(lines, vim.split((s.text:gsub('\n+$', '')), '\n', { plain = true }))
  return lines
end

local function geometry(lines)
  local width = math.max(20, math.min(math.floor(vim.o.columns * 0.8), 100))
  local height = 0
  for _, l in ipairs(lines) do height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / width)) end
  height = math.max(1, math.min(height, vim.o.lines - 6))
  return {
    relative = 'editor', row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2), width = width, height = height,
  }
end

-- draw(task_id): (re)draws the float of a stream, opening it at the first
-- part. A float the user closed stays closed until the reply.
local function draw(task_id)
  local s = streams[task_id]
  if not s or s.closed then return end
  if s.win and not api.nvim_win_is_valid(s.win) then
    s.closed = true
    return
  end
  local lines = M.lines(task_id, s)
  if not (s.buf and api.nvim_buf_is_valid(s.buf)) then
    s.buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_option(s.buf, 'bufhidden', 'wipe')
    api.nvim_buf_set_option(s.buf, 'filetype', 'markdown')
    pcall(api.nvim_buf_set_name, s.buf, 'agentls://answer-' .. task_id:gsub('[^%w%-_.]', '-') .. '/' .. s.buf)
  end
  api.nvim_buf_set_option(s.buf, 'modifiable', true)
  api.nvim_buf_set_lines(s.buf, 0, -1, false, lines)
  api.nvim_buf_set_option(s.buf, 'modifiable', false)
  local cfg = geometry(lines)
  if s.win and s.split then
    api.nvim_win_set_height(s.win, math.max(api.nvim_win_get_height(s.win), math.min(cfg.height + 1, math.floor(vim.o.lines / 2))))
  elseif s.win then
    api.nvim_win_set_config(s.win, cfg)
  else
    if s.split then
      -- A split at the bottom, the focus left where the user is.
      local prev = api.nvim_get_current_win()
      vim.cmd('noautocmd botright ' .. math.min(cfg.height + 1, math.floor(vim.o.lines / 2)) .. 'split')
      s.win = api.nvim_get_current_win()
      api.nvim_win_set_buf(s.win, s.buf)
      for opt, v in pairs({ number = false, relativenumber = false, signcolumn = 'no', winfixheight = true }) do
        api.nvim_win_set_option(s.win, opt, v)
      end
      api.nvim_set_current_win(prev)
    else
      cfg.style, cfg.border, cfg.zindex, cfg.focusable = 'minimal', 'rounded', 45, true
      s.win = api.nvim_open_win(s.buf, false, cfg)
      api.nvim_win_set_option(s.win, 'winhl', 'Normal:Normal,FloatBorder:Comment')
    end
    api.nvim_win_set_option(s.win, 'wrap', true)
    api.nvim_win_set_option(s.win, 'linebreak', true)
    api.nvim_win_set_option(s.win, 'conceallevel', 2)
    local buf = s.buf
    for _, k in ipairs({ 'q', '<Esc>' }) do
      vim.keymap.set('n', k, function()
        M.dismiss(task_id)
        local w = api.nvim_get_current_win()
        if api.nvim_win_get_buf(w) == buf then pcall(api.nvim_win_close, w, true) end
      end, { buffer = buf, nowait = true, desc = 'agentls: close' })
    end
  end
  -- The newest text in view: the cursor on the last line scrolls the window.
  pcall(api.nvim_win_set_cursor, s.win, { #lines, 0 })
  vim.cmd('redraw')
end

-- on_answer(params, opts): one agentls/answer notification. opts.orphan:
-- no task of this plugin waits for its reply (the task was started by a
-- plain workspace/executeCommand), so at done the window is the answer's
-- final view: it takes the focus (q closes it) and the stream is forgotten.
-- opts.split: stream into a split rather than a float (view = 'split').
function M.on_answer(params, opts)
  if type(params) ~= 'table' or type(params.taskId) ~= 'string' then return end
  local text = type(params.text) == 'string' and params.text or ''
  local s = streams[params.taskId]
  if not s then
    if text == '' then return end
    s = { text = '', split = opts ~= nil and opts.split == true }
    streams[params.taskId] = s
  end
  s.text = s.text .. text
  if params.done == true then s.done = true end
  draw(params.taskId)
  if s.done and opts and opts.orphan then
    if s.win and api.nvim_win_is_valid(s.win) then api.nvim_set_current_win(s.win) end
    streams[params.taskId] = nil
  end
end

-- dismiss(task_id): the user closed the float; the stream goes on unseen.
function M.dismiss(task_id)
  local s = streams[task_id]
  if not s then return end
  s.closed = true
  if s.win and api.nvim_win_is_valid(s.win) then pcall(api.nvim_win_close, s.win, true) end
  s.win = nil
end

-- close(task_id): the task's reply came: its float closes and the stream
-- is forgotten (the reply's answer float takes its place).
function M.close(task_id)
  M.dismiss(task_id)
  streams[task_id] = nil
end

-- close_all(): every stream ends (the server stopped).
function M.close_all()
  for id in pairs(streams) do M.close(id) end
end

-- text(task_id): what was streamed of a task's answer so far (tests).
function M.text(task_id)
  local s = streams[task_id]
  return s and s.text or nil
end

-- open(): the task ids whose stream window is on the screen (tests).
function M.open()
  local out = {}
  for id, s in pairs(streams) do
    if s.win and api.nvim_win_is_valid(s.win) then table.insert(out, id) end
  end
  return out
end

return M
