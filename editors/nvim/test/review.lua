-- Headless test of the review float (agentls.review) with hand-made
-- workspace/applyEdit requests in the LSP 3.16 shape the server sends
-- under its `review` setting: changeAnnotations with needsConfirmation and
-- AnnotatedTextEdits, one annotation per hunk.
--
--   timeout 30 nvim --headless --clean -u NONE --cmd 'set rtp^=editors/nvim' \
--     -S editors/nvim/test/review.lua
--
-- Findings on stdout (PASS/FAIL lines); the exit code is the verdict.
local failed, lines_out = 0, {}
local function note(ok, what)
  table.insert(lines_out, (ok and 'PASS ' or 'FAIL ') .. what)
  if not ok then failed = failed + 1 end
end

local ok_main, err_main = xpcall(function()
  local agentls = require('agentls')
  local review = require('agentls.review')
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local file = dir .. '/main.go'
  local text = { 'package main', '', '// Greet says hello — to name.', 'func Greet(name string) string {', '\treturn "Hello, " + name', '}', '', 'func main() {}' }
  local function fresh()
    vim.fn.writefile(text, file)
    vim.cmd('silent! bwipeout! ' .. vim.fn.fnameescape(file))
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
    return vim.api.nvim_get_current_buf()
  end
  local uri = vim.uri_from_fname(file)
  local function two_hunks(versioned)
    local e1 = { range = { start = { line = 2, character = 0 }, ['end'] = { line = 3, character = 0 } },
      newText = '// Greet says hello — ACCEPTED-HUNK.\n', annotationId = 'h1' }
    local e2 = { range = { start = { line = 4, character = 8 }, ['end'] = { line = 4, character = 17 } },
      newText = 'REJECTED-HUNK', annotationId = 'h2' }
    local edit = { changeAnnotations = {
      h1 = { label = 'hunk 1 of 2', needsConfirmation = true, description = 'main.go:3' },
      h2 = { label = 'hunk 2 of 2', needsConfirmation = true, description = 'main.go:5' },
    } }
    if versioned then
      edit.documentChanges = { { textDocument = { uri = uri, version = versioned }, edits = { e1, e2 } } }
    else
      edit.changes = { [uri] = { e1, e2 } }
    end
    return { label = 'agentls: edit main.go', edit = edit }
  end
  local function buf_text(b) return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n') end

  -- The capability is declared.
  local caps = agentls.client_config(dir).capabilities
  note(caps.workspace.workspaceEdit.changeAnnotationSupport ~= nil, 'the client declares workspace.workspaceEdit.changeAnnotationSupport')
  note(agentls.server_settings({ review = 'always' }).review == 'always', 'the review setting reaches the server settings')

  -- Hunks: old and new lines (the em dash counts one UTF-16 unit).
  local b = fresh()
  local items = review.items(two_hunks().edit, 'utf-16')
  note(#items == 2, 'two annotations give two hunks: ' .. #items)
  note(items[1] and items[1].old[1] == text[3] and items[1].new[1] == '// Greet says hello — ACCEPTED-HUNK.' and #items[1].new == 1,
    'hunk 1 shows the old line and the new one: ' .. vim.inspect(items[1] and { items[1].old, items[1].new }, { newline = ' ', indent = '' }))
  note(items[2] and items[2].new[1] == '\treturn REJECTED-HUNK + name', 'hunk 2 applies a part-line edit: ' .. vim.inspect(items[2] and items[2].new, { newline = ' ', indent = '' }))
  local rendered = table.concat(review.render(items, 1, 'agentls: review'), '\n')
  note(rendered:find('a accept', 1, true) and rendered:find('R reject all', 1, true) and rendered:find('main.go:3', 1, true)
    and rendered:find('-// Greet says hello', 1, true) and rendered:find('+// Greet says hello — ACCEPTED', 1, true),
    'the float shows the keys, the file and the old and new lines')

  -- Through the plugin's handler, keys typed as a user would: accept the
  -- first hunk, reject the second.
  local handler = agentls._handlers()['workspace/applyEdit']
  local defaults_called = 0
  -- (Neovim's own handler needs a live client: this one does what it does.)
  vim.lsp.handlers['workspace/applyEdit'] = function(_, params)
    defaults_called = defaults_called + 1
    local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, 'utf-16')
    return { applied = ok, failureReason = err }
  end
  vim.api.nvim_feedkeys('ar', 't', false)
  local res = handler(nil, two_hunks(), { client_id = nil, id = 7 })
  local t = buf_text(b)
  note(type(res) == 'table' and res.applied == true, 'a then r answers applied: ' .. vim.inspect(res, { newline = ' ', indent = '' }))
  note(t:find('ACCEPTED-HUNK', 1, true) ~= nil and t:find('REJECTED-HUNK', 1, true) == nil, 'only the accepted hunk is in the buffer')
  note(t:find('"Hello, " + name', 1, true) ~= nil, 'the rejected hunk\'s old text stays')
  note(review.open_lines() == nil, 'the float is closed after the last decision')

  -- R rejects everything: applied false, nothing changes.
  b = fresh()
  vim.api.nvim_feedkeys('R', 't', false)
  res = handler(nil, two_hunks(), { id = 8 })
  note(type(res) == 'table' and res.applied == false and res.failureReason == 'rejected in review', 'R answers applied false, rejected in review: ' .. vim.inspect(res, { newline = ' ', indent = '' }))
  note(buf_text(b) == table.concat(text, '\n'), 'R leaves the buffer as it was')

  -- A accepts everything (versioned documentChanges of the current version).
  b = fresh()
  vim.api.nvim_feedkeys('A', 't', false)
  res = handler(nil, two_hunks(vim.lsp.util.buf_versions[b] or 0), { id = 9 })
  t = buf_text(b)
  note(res and res.applied == true and t:find('ACCEPTED-HUNK', 1, true) and t:find('REJECTED-HUNK', 1, true), 'A applies every hunk: ' .. vim.inspect(res, { newline = ' ', indent = '' }))

  -- q with nothing decided: nothing is applied; j moves, then a accepts
  -- the second hunk only.
  b = fresh()
  vim.api.nvim_feedkeys('jaq', 't', false)
  res = handler(nil, two_hunks(), { id = 10 })
  t = buf_text(b)
  note(res and res.applied == true and not t:find('ACCEPTED-HUNK', 1, true) and t:find('REJECTED-HUNK', 1, true),
    'j moves to the second hunk, a accepts it, q finishes with the first undecided (not applied): ' .. vim.inspect(res, { newline = ' ', indent = '' }))

  -- The buffer changed while the float was open (its version is newer
  -- than the edit's): nothing is applied, the server is told why.
  b = fresh()
  vim.api.nvim_feedkeys('A', 't', false)
  local p = two_hunks(1)
  vim.lsp.util.buf_versions[b] = 5
  res = handler(nil, p, { id = 11 })
  note(res and res.applied == false and tostring(res.failureReason):find('changed during review', 1, true) ~= nil,
    'a document newer than the edit is not applied: ' .. vim.inspect(res, { newline = ' ', indent = '' }))
  note(buf_text(b) == table.concat(text, '\n'), 'the newer buffer is untouched')

  -- Without review, a versioned edit for an older text is refused (the
  -- default handler would skip it and answer applied).
  b = fresh()
  local plain_stale = two_hunks(1)
  plain_stale.edit.changeAnnotations = nil
  vim.lsp.util.buf_versions[b] = 5
  res = handler(nil, plain_stale, { id = 14 })
  note(res and res.applied == false and tostring(res.failureReason):find('changed', 1, true) ~= nil and buf_text(b) == table.concat(text, '\n'),
    'an unreviewed edit for an older version is refused, not skipped silently: ' .. vim.inspect(res, { newline = ' ', indent = '' }))
  note(agentls.client_config(dir).capabilities.workspace.workspaceEdit.documentChanges == true, 'the client declares versioned documentChanges')

  -- Withdrawn (the task ended): no answer, float closed.
  fresh()
  local r2 = review.handle(two_hunks(), 'utf-16', { withdrawn = function() return true end })
  note(r2 == nil and review.open_lines() == nil, 'a withdrawn review answers nothing and closes')

  -- Without needsConfirmation: the default handler, as before.
  b = fresh()
  local plain = two_hunks()
  plain.edit.changeAnnotations.h1.needsConfirmation = false
  plain.edit.changeAnnotations.h2.needsConfirmation = nil
  local before = defaults_called
  res = handler(nil, plain, { id = 12 })
  t = buf_text(b)
  note(defaults_called == before + 1, 'an edit without needsConfirmation goes to the default handler')
  note(t:find('ACCEPTED-HUNK', 1, true) and t:find('REJECTED-HUNK', 1, true), 'and is applied whole')

  -- Mixed: edits whose annotation needs no confirmation are applied with
  -- the accepted ones.
  b = fresh()
  local mixed = two_hunks()
  mixed.edit.changeAnnotations.h1.needsConfirmation = false
  vim.api.nvim_feedkeys('r', 't', false)
  res = handler(nil, mixed, { id = 13 })
  t = buf_text(b)
  note(res and res.applied == true and t:find('ACCEPTED-HUNK', 1, true) and not t:find('REJECTED-HUNK', 1, true),
    'an edit needing no confirmation is applied beside the reviewed ones: ' .. vim.inspect(res, { newline = ' ', indent = '' }))
end, debug.traceback)
if not ok_main then note(false, 'error: ' .. tostring(err_main)) end
table.insert(lines_out, string.format('nvim-review: %d failed', failed))
io.stdout:write(table.concat(lines_out, '\n') .. '\n')
vim.cmd('cquit ' .. (failed > 0 and 1 or 0))
