-- agentls.review: review before apply. A workspace/applyEdit whose change
-- annotations ask for confirmation (LSP 3.16 changeAnnotations with
-- needsConfirmation, each text edit an AnnotatedTextEdit) opens a diff
-- float with one entry per hunk (one annotation per hunk, per document);
-- the user accepts or rejects each, and only the accepted edits are
-- applied. An edit without such annotations goes to the default handler,
-- as before.
--
-- Neovim answers a server request with its handler's return value, so the
-- float is modal and runs inside the handler (like the approval picker,
-- ui.pick): keys are read with getchar(0) in a vim.wait loop, which keeps
-- LSP messages flowing ($/progress, $/cancelRequest).
local M = {}

local api = vim.api

M.keys_hint = 'a accept · r reject · A accept all · R reject all · j/k next/prev · q finish (undecided = rejected)'

-- needs_confirmation(edit): whether a WorkspaceEdit has an annotation
-- with needsConfirmation that one of its text edits carries.
function M.needs_confirmation(edit)
  if type(edit) ~= 'table' or type(edit.changeAnnotations) ~= 'table' then return false end
  for _, a in pairs(edit.changeAnnotations) do
    if type(a) == 'table' and a.needsConfirmation == true then return true end
  end
  return false
end

local function byte_col(line, character, enc)
  if enc == 'utf-8' then return math.min(character, #line) end
  local ok, b = pcall(vim.str_byteindex, line, character, enc ~= 'utf-32')
  if ok then return b end
  return #line
end

-- doc_lines(uri): the lines of the document (its buffer, loading the file
-- when no buffer holds it).
local function doc_lines(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if not api.nvim_buf_is_loaded(bufnr) then vim.fn.bufload(bufnr) end
  return api.nvim_buf_get_lines(bufnr, 0, -1, false), bufnr
end

-- hunk_text(lines, edits, enc): the old and new lines of the lines the
-- edits touch, from the first to the last (the edits applied to them).
function M.hunk_text(lines, edits, enc)
  local first, last = math.huge, -1
  for _, e in ipairs(edits) do
    local s, en = e.range.start, e.range['end']
    first = math.min(first, s.line)
    -- An end at the start of a line (a whole-line edit) does not touch it.
    last = math.max(last, (en.character == 0 and en.line > s.line) and en.line - 1 or en.line)
  end
  local old = {}
  for l = first, last do table.insert(old, lines[l + 1] or '') end
  -- Apply the edits to the old lines' text (each line with its newline),
  -- last first.
  local text = table.concat(old, '\n') .. '\n'
  local function offset(pos)
    local off = 0
    for l = first, pos.line - 1 do off = off + #(lines[l + 1] or '') + 1 end
    return off + byte_col(lines[pos.line + 1] or '', pos.character, enc)
  end
  local spans = {}
  for _, e in ipairs(edits) do
    table.insert(spans, { s = offset(e.range.start), e = offset(e.range['end']), text = e.newText or '' })
  end
  table.sort(spans, function(a, b) return a.s > b.s end)
  for _, sp in ipairs(spans) do
    text = text:sub(1, sp.s) .. sp.text .. text:sub(sp.e + 1)
  end
  local new = text == '' and {} or vim.split(text:gsub('\n$', ''), '\n', { plain = true })
  return old, new, first
end

-- items(edit, enc): the hunks to review, in order: per document (in the
-- edit's order) the text edits grouped by annotation. Edits whose
-- annotation does not ask for confirmation are applied without a question
-- (they are not items). Resource operations (create, rename, delete) with
-- a confirming annotation are one item each.
function M.items(edit, enc)
  local annotations = edit.changeAnnotations or {}
  local function confirm(id)
    local a = id and annotations[id]
    return type(a) == 'table' and a.needsConfirmation == true
  end
  local docs = {}
  if type(edit.documentChanges) == 'table' then
    for i, dc in ipairs(edit.documentChanges) do
      if dc.kind then
        table.insert(docs, { op = dc, index = i })
      else
        table.insert(docs, { uri = dc.textDocument.uri, version = dc.textDocument.version, edits = dc.edits or {}, index = i })
      end
    end
  elseif type(edit.changes) == 'table' then
    local uris = vim.tbl_keys(edit.changes)
    table.sort(uris)
    for _, uri in ipairs(uris) do table.insert(docs, { uri = uri, edits = edit.changes[uri] }) end
  end
  local items = {}
  for _, d in ipairs(docs) do
    if d.op then
      if confirm(d.op.annotationId) then
        local a = annotations[d.op.annotationId]
        local what = d.op.kind == 'rename' and (vim.uri_to_fname(d.op.oldUri) .. ' → ' .. vim.uri_to_fname(d.op.newUri))
          or vim.uri_to_fname(d.op.uri)
        table.insert(items, { doc = d, op = d.op, label = a.label, description = a.description,
          file = vim.fn.fnamemodify(what, ':~:.'), lines = { d.op.kind .. ' ' .. what } })
      else
        d.auto = true
      end
    else
      local lines = doc_lines(d.uri)
      local groups, order = {}, {}
      d.auto_edits = {}
      for _, te in ipairs(d.edits) do
        if confirm(te.annotationId) then
          if not groups[te.annotationId] then
            groups[te.annotationId] = {}
            table.insert(order, te.annotationId)
          end
          table.insert(groups[te.annotationId], te)
        else
          table.insert(d.auto_edits, te)
        end
      end
      for _, id in ipairs(order) do
        local a = annotations[id]
        local old, new, first = M.hunk_text(lines, groups[id], enc)
        table.insert(items, { doc = d, edits = groups[id], label = a.label, description = a.description,
          file = vim.fn.fnamemodify(vim.uri_to_fname(d.uri), ':~:.'), line = first + 1, old = old, new = new })
      end
    end
  end
  return items, docs
end

local marks = { accept = '[+] accept', reject = '[-] reject' }

-- render(items, cur, title): the float's lines and the first line of each
-- item (1-based).
function M.render(items, cur, title, hint)
  local lines = { title, hint or M.keys_hint, '' }
  local starts = {}
  for i, it in ipairs(items) do
    starts[i] = #lines + 1
    local mark = marks[it.decision] or '[ ] undecided'
    local head = string.format('%s %s %d/%d %s', i == cur and '>' or ' ', mark, i, #items, it.file)
    if it.line then head = head .. ':' .. it.line end
    local say = it.description and it.description ~= '' and it.description or it.label
    if say and say ~= '' then head = head .. '  ' .. vim.split(say, '\n', { plain = true })[1] end
    table.insert(lines, head)
    if it.old then
      table.insert(lines, string.format('@@ -%d,%d +%d,%d @@', it.line, #it.old, it.line, #it.new))
      for _, l in ipairs(it.old) do table.insert(lines, '-' .. l) end
      for _, l in ipairs(it.new) do table.insert(lines, '+' .. l) end
    else
      for _, l in ipairs(it.lines) do table.insert(lines, '  ' .. l) end
    end
    table.insert(lines, '')
  end
  return lines, starts
end

-- review(items, title, opts) -> true when finished (decisions in each
-- item's .decision), false when withdrawn. opts.withdrawn() -> true closes
-- the float; opts.on_cancel() (key c) cancels the task. opts.keys, for
-- tests: a function returning the next key instead of getchar.
function M.review(items, title, opts)
  opts = opts or {}
  local cur = 1
  local b = api.nvim_create_buf(false, true)
  api.nvim_buf_set_option(b, 'bufhidden', 'wipe')
  pcall(api.nvim_buf_set_name, b, 'agentls://review/' .. b)
  local width = math.max(40, math.min(vim.o.columns - 4, 120))
  -- As tall as the hunks need, at most the screen.
  local hint = M.keys_hint .. (opts.on_cancel and ' · c cancels the task' or '')
  local height = math.max(5, math.min(#M.render(items, cur, title, hint), vim.o.lines - 6))
  local win = api.nvim_open_win(b, false, {
    relative = 'editor', row = 1, col = math.floor((vim.o.columns - width) / 2), width = width, height = height,
    style = 'minimal', border = 'double', zindex = 70,
  })
  api.nvim_win_set_option(win, 'wrap', false)
  api.nvim_win_set_option(win, 'winhl', 'Normal:Normal,FloatBorder:WarningMsg')
  api.nvim_buf_set_option(b, 'filetype', 'diff')
  M._open = { buf = b, win = win }
  local ns = api.nvim_create_namespace('agentls_review')
  local function draw()
    local lines, starts = M.render(items, cur, title, hint)
    api.nvim_buf_set_option(b, 'modifiable', true)
    api.nvim_buf_set_lines(b, 0, -1, false, lines)
    api.nvim_buf_set_option(b, 'modifiable', false)
    api.nvim_buf_clear_namespace(b, ns, 0, -1)
    api.nvim_buf_add_highlight(b, ns, 'Title', 0, 0, -1)
    api.nvim_buf_add_highlight(b, ns, 'Comment', 1, 0, -1)
    for i, s in ipairs(starts) do
      api.nvim_buf_add_highlight(b, ns, i == cur and 'PmenuSel' or 'Label', s - 1, 0, -1)
    end
    -- The current hunk in view, its header at the top when it fits.
    if api.nvim_win_is_valid(win) then
      local nexts = starts[cur + 1] or (#lines + 1)
      api.nvim_win_set_cursor(win, { math.min(nexts - 1, #lines), 0 })
      api.nvim_win_set_cursor(win, { starts[cur], 0 })
    end
    vim.cmd('redraw')
  end
  local function undecided_after(i)
    for j = i + 1, #items do if not items[j].decision then return j end end
    for j = 1, i do if not items[j].decision then return j end end
    return nil
  end
  draw()
  local finished, done = false, false
  local next_key = opts.keys or function()
    local c = vim.fn.getchar(0)
    if c == 0 then return nil end
    return type(c) == 'number' and vim.fn.nr2char(c) or c
  end
  while not done do
    vim.wait(1000000, function()
      if opts.withdrawn and opts.withdrawn() then done = true return true end
      local k = next_key()
      if not k then return false end
      if k == 'a' or k == 'r' then
        items[cur].decision = k == 'a' and 'accept' or 'reject'
        local n = undecided_after(cur)
        if n then cur = n else finished, done = true, true end
      elseif k == 'A' or k == 'R' then
        for _, it in ipairs(items) do
          if not it.decision then it.decision = k == 'A' and 'accept' or 'reject' end
        end
        finished, done = true, true
      elseif k == 'j' or k == '\128kd' or k == 'n' then
        cur = cur % #items + 1
      elseif k == 'k' or k == '\128ku' or k == 'p' then
        cur = (cur - 2) % #items + 1
      elseif k == 'q' or k == '\27' or k == '\r' then
        finished, done = true, true
      elseif k == 'c' and opts.on_cancel then
        opts.on_cancel()
      end
      if not done then draw() end
      return done
    end, 20)
  end
  if api.nvim_win_is_valid(win) then pcall(api.nvim_win_close, win, true) end
  M._open = nil
  vim.cmd('redraw')
  return finished
end

-- open_lines(): the lines of the open review float (tests), or nil.
function M.open_lines()
  if M._open and api.nvim_buf_is_valid(M._open.buf) then return api.nvim_buf_get_lines(M._open.buf, 0, -1, false) end
  return nil
end

-- version(bufnr): the buffer's version as the client sent it to servers
-- (util.buf_versions up to 0.10; the changedtick later), nil unloaded.
local function version(bufnr)
  local v = vim.lsp.util.buf_versions and vim.lsp.util.buf_versions[bufnr]
  if v == nil and api.nvim_buf_is_loaded(bufnr) then v = api.nvim_buf_get_changedtick(bufnr) end
  return v
end

-- stale(edit): why a versioned edit cannot apply (a document's buffer is
-- newer than the version the edit was made for), or nil. Neovim's own
-- handler would skip such a document and still answer applied.
function M.stale(edit)
  local dcs = type(edit) == 'table' and type(edit.documentChanges) == 'table' and edit.documentChanges or {}
  for _, dc in ipairs(dcs) do
    local td = type(dc) == 'table' and not dc.kind and dc.textDocument
    if td and type(td.version) == 'number' and td.version > 0 then
      local have = version(vim.uri_to_bufnr(td.uri))
      if have and have > td.version then
        return 'the document ' .. vim.uri_to_fname(td.uri) .. ' changed (version ' .. have .. ', edit for ' .. td.version .. ')'
      end
    end
  end
  return nil
end

-- apply(docs, enc): apply the accepted items and the edits that needed no
-- confirmation, in the edit's order. Returns nil, or the failure reason
-- when a document changed since the server sent the edit (nothing of it
-- is applied then).
function M.apply(docs, enc)
  for _, d in ipairs(docs) do
    if d.uri and d.version and d.version ~= vim.NIL and d.version > 0 then
      local bufnr = vim.uri_to_bufnr(d.uri)
      local have = version(bufnr)
      if have and have > d.version then
        return 'the document ' .. vim.uri_to_fname(d.uri) .. ' changed during review (version ' .. have .. ', edit for ' .. d.version .. ')'
      end
    end
  end
  for _, d in ipairs(docs) do
    if d.op then
      if d.auto or d.accepted then vim.lsp.util.apply_workspace_edit({ documentChanges = { d.op } }, enc) end
    else
      local edits = vim.deepcopy(d.auto_edits or {})
      for _, te in ipairs(d.accepted_edits or {}) do table.insert(edits, te) end
      if #edits > 0 then vim.lsp.util.apply_text_edits(edits, vim.uri_to_bufnr(d.uri), enc) end
    end
  end
  return nil
end

-- handle(params, enc, opts) -> the ApplyWorkspaceEditResult, or nil when
-- the review was withdrawn.
function M.handle(params, enc, opts)
  local items, docs = M.items(params.edit, enc)
  if #items == 0 then
    local why = M.apply(docs, enc)
    return { applied = why == nil, failureReason = why }
  end
  local title = 'agentls: review ' .. (params.label and params.label:gsub('^agentls: ', '') or 'the edit')
  if not M.review(items, title, opts) then return nil end
  local accepted = 0
  for _, it in ipairs(items) do
    if it.decision == 'accept' then
      accepted = accepted + 1
      if it.op then
        it.doc.accepted = true
      else
        it.doc.accepted_edits = it.doc.accepted_edits or {}
        vim.list_extend(it.doc.accepted_edits, it.edits)
      end
    end
  end
  local auto = false
  for _, d in ipairs(docs) do
    if d.auto or (d.auto_edits and #d.auto_edits > 0) then auto = true end
  end
  if accepted == 0 and not auto then return { applied = false, failureReason = 'rejected in review' } end
  local why = M.apply(docs, enc)
  if why then return { applied = false, failureReason = why } end
  return { applied = true }
end

return M
