-- Headless test of agentls.ghost's answer handling, without a server:
-- which items of an answer show (ranges, the typed prefix, utf-16
-- columns), that an answer for a buffer, cursor or request that moved on is
-- dropped, how the ghost text is drawn (virt_text, virt_lines) and what
-- accept and next do to the buffer. The real round trip is the tmux suite
-- (editors/testing/ghost_term.py).
--
--   nvim --headless --clean -u NONE --cmd 'set rtp^=editors/nvim' -S editors/nvim/test/ghost.lua
-- Findings on stdout; exit code 1 when one failed.
local failed = 0
local out = {}
local function note(ok, what)
  table.insert(out, (ok and 'PASS ' or 'FAIL ') .. what)
  if not ok then failed = failed + 1 end
end

local ok_main, err = xpcall(function()
  local ghost = require('agentls.ghost')
  ghost.setup({})
  -- Headless Neovim cannot be in Insert mode: the test says it is.
  ghost._in_insert = function() return true end
  local items_of = ghost._items_of

  -- 1. Which items show, and what of them.
  local line = '\tx := fo'
  local col = #line
  local function shown(result, l, c, enc)
    local r = {}
    for _, it in ipairs(items_of(result, l or line, c or col, enc or 'utf-16', 0)) do table.insert(r, it.shown) end
    return table.concat(r, '|')
  end
  note(shown({ items = { { insertText = 'o()' } } }) == 'o()', 'an InlineCompletionList item without a range shows at the cursor')
  note(shown({ { insertText = 'o()' } }) == 'o()', 'an array of items is read too')
  note(shown({ items = { { insertText = 'foo()', range = { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 8 } } } } }) == 'o()',
    'an item whose range holds the typed "fo" shows only what is not typed yet')
  note(shown({ items = { { insertText = 'bar()', range = { start = { line = 0, character = 6 }, ['end'] = { line = 0, character = 8 } } } } }) == '',
    'an item that does not begin with what its range holds is left out (the user typed past it)')
  note(shown({ items = { { insertText = 'o()', range = { start = { line = 1, character = 0 }, ['end'] = { line = 1, character = 0 } } } } }) == '',
    'an item whose range is on another line is left out')
  note(shown({ items = { { insertText = { kind = 'snippet', value = 'o($1)' } } } }) == 'o($1)', 'a StringValue insertText is read')
  note(shown({ items = { { insertText = '' }, { insertText = 'o()' }, { insertText = 'o()' } } }) == 'o()', 'empty and repeated items are left out')
  -- "é" is 2 bytes, 1 utf-16 unit: a range from character 1 starts after it.
  local u = 'é = fo'
  note(shown({ items = { { insertText = ' = foo', range = { start = { line = 0, character = 1 }, ['end'] = { line = 0, character = 6 } } } } }, u, #u, 'utf-16') == 'o',
    'utf-16 range columns map to byte columns')

  -- 2. Answers that moved on are dropped; a fresh one shows.
  vim.cmd('enew')
  -- The cursor after the last character, as in Insert mode.
  vim.o.virtualedit = 'onemore'
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'func main() {', '\tx := fo', '}' })
  vim.api.nvim_win_set_cursor(0, { 2, 8 })
  local ns = vim.api.nvim_get_namespaces()['agentls_ghost']
  local function req(seq)
    return { seq = seq, bufnr = buf, tick = vim.api.nvim_buf_get_changedtick(buf), row = 1, col = 8, line = '\tx := fo', enc = 'utf-16' }
  end
  local answer = { items = { { insertText = 'o()' } } }
  local marks = function() return vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true }) end

  -- No request was sent: the last request number is 0, and -1 stands
  -- for one before it.
  local r = req(0)
  note(ghost._answer(r, nil, answer) == 'shown' and #marks() == 1, 'a fresh answer shows')
  ghost.dismiss()
  note(#marks() == 0, 'dismiss removes the ghost text')
  note(ghost._answer(req(-1), nil, answer) == 'a newer request' and #marks() == 0, 'an answer to an older request is dropped')
  local changed = req(0)
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { '\tx := fo ' })
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { '\tx := fo' })
  note(ghost._answer(changed, nil, answer) == 'the buffer changed' and #marks() == 0,
    'an answer for a buffer changed since (changedtick) is dropped, even when the text is back as it was')
  local moved = req(0)
  vim.api.nvim_win_set_cursor(0, { 2, 3 })
  note(ghost._answer(moved, nil, answer) == 'the cursor moved' and #marks() == 0, 'an answer for a cursor that moved is dropped')
  vim.api.nvim_win_set_cursor(0, { 2, 8 })
  note(ghost._answer(req(0), { code = -32800, message = 'cancelled' }, nil) == 'no answer', 'an error answer (cancelled) shows nothing')
  ghost._in_insert = function() return false end
  note(ghost._answer(req(0), nil, answer) == 'left the buffer or Insert mode', 'an answer after Insert mode was left is dropped')
  ghost._in_insert = function() return true end

  -- 3. Drawing: one line as virtual text at the cursor, more as virt_lines.
  ghost._answer(req(0), nil, { items = { { insertText = 'o()\n\treturn x' } } })
  local m = marks()[1]
  local d = m and m[4] or {}
  local first = d.virt_text and d.virt_text[1] and d.virt_text[1][1]
  local lines = d.virt_lines or {}
  note(m ~= nil and m[2] == 1 and m[3] == 8 and first == 'o()' and #lines == 1 and lines[1][1][1] == '\treturn x'
    and d.virt_text[1][2] == 'AgentlsGhost',
    'a two-line answer: its first line as virtual text at the cursor, the second as a virtual line (AgentlsGhost)')
  note(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == '\tx := fo', 'showing it leaves the buffer as it was')

  -- 4. Accept inserts it (replacing the range) and puts the cursor at its end.
  ghost.dismiss()
  ghost._answer(req(0), nil, { items = {
    { insertText = 'foo()', range = { start = { line = 1, character = 6 }, ['end'] = { line = 1, character = 8 } } },
    { insertText = 'fork()', range = { start = { line = 1, character = 6 }, ['end'] = { line = 1, character = 8 } } },
  } })
  ghost.cycle(1)
  local g = ghost.current()
  note(g and g.text == 'fork()' and g.index == 2 and marks()[1][4].virt_text[1][1] == 'rk()', 'next shows the second item')
  ghost.cycle(1)
  note(ghost.current().index == 1, 'next after the last goes back to the first')
  local accepted = ghost.accept()
  local cur = vim.api.nvim_win_get_cursor(0)
  note(accepted and vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == '\tx := foo()' and cur[1] == 2 and cur[2] == #'\tx := foo()' and #marks() == 0,
    'accept replaces the range with the item, the cursor after it, the ghost text gone: ' .. vim.inspect(vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1]))
  note(ghost.accept() == false, 'accept with nothing shown does nothing (false)')
  -- A multi-line accept.
  vim.api.nvim_win_set_cursor(0, { 2, #'\tx := foo()' })
  local r2 = { seq = 0, bufnr = buf, tick = vim.api.nvim_buf_get_changedtick(buf), row = 1, col = #'\tx := foo()', line = '\tx := foo()', enc = 'utf-16' }
  ghost._answer(r2, nil, { items = { { insertText = '\n\treturn x' } } })
  ghost.accept()
  note(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') == 'func main() {\n\tx := foo()\n\treturn x\n}'
    and vim.api.nvim_win_get_cursor(0)[1] == 3, 'a multi-line item is inserted as lines, the cursor on its last')
  note(ghost.stats.shown >= 4 and ghost.stats.dropped >= 5, string.format('stats count what was shown (%d) and dropped (%d)', ghost.stats.shown, ghost.stats.dropped))
end, debug.traceback)
if not ok_main then note(false, 'error: ' .. tostring(err)) end
io.stdout:write(table.concat(out, '\n') .. string.format('\nghost unit: %d failed\n', failed))
vim.cmd((failed > 0) and 'cquit 1' or 'qall!')
