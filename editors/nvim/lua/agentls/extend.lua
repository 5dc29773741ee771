-- agentls.extend: the custom commands (prompt files, agentls.prompts) in a
-- picker, and the list of the model's tools and hooks (agentls.tools).
local M = {}
local ui = require('agentls.ui')

local function agentls() return require('agentls') end

-- request(command, cb): executeCommand with no argument; cb(err, result).
local function request(command, cb)
  local client = agentls().client()
  if not client then return cb({ message = 'no agentls client for this buffer' }) end
  client.request('workspace/executeCommand', { command = command, arguments = {} }, function(err, result)
    cb(err, result)
  end)
end

-- prompts(cb): agentls.prompts; cb(err, list).
function M.prompts(cb)
  request('agentls.prompts', function(err, list)
    cb(err, type(list) == 'table' and list or {})
  end)
end

-- label(p): one picker line: "/name <hint>  description  (scope)".
function M.label(p)
  local hint = (p.argumentHint and p.argumentHint ~= '') and (' ' .. p.argumentHint) or ''
  return string.format('/%s%s  %s  (%s)', p.name, hint, p.description or '', p.scope or '')
end

-- run_prompt(p, args, o): agentls.run "/name args" on the current buffer,
-- with the command's range (the selection its $SELECTION takes).
function M.run_prompt(p, args, o)
  o = o or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local prompt = '/' .. p.name
  if args and vim.trim(args) ~= '' then prompt = prompt .. ' ' .. vim.trim(args) end
  local run = { prompt = prompt, uri = vim.uri_from_bufnr(bufnr) }
  if p.mode and p.mode ~= '' then run.mode = p.mode end
  if o.range then run.range = o.range end
  return agentls().run(run, { bufnr = bufnr, on_done = o.on_done })
end

-- pick(o): choose a custom command (vim.ui.select), ask for its arguments
-- when it takes some (vim.ui.input), run it. o.name skips the picker;
-- o.args skips the question; o.range is the selection.
function M.pick(o)
  o = o or {}
  M.prompts(function(err, list)
    if err then
      return vim.notify('agentls: agentls.prompts failed: ' .. ui.one_line(err.message or ''), vim.log.levels.ERROR)
    end
    if #list == 0 then
      return vim.notify('agentls: no custom commands (add Markdown files to .agentls/commands/)')
    end
    local function go(p)
      if not p then return end
      if o.args ~= nil or not p.argumentHint or p.argumentHint == '' then
        return M.run_prompt(p, o.args, o)
      end
      vim.ui.input({ prompt = '/' .. p.name .. ' ' .. p.argumentHint .. ': ' }, function(args)
        if args ~= nil then M.run_prompt(p, args, o) end
      end)
    end
    if o.name and o.name ~= '' then
      for _, p in ipairs(list) do
        if p.name == o.name then return go(p) end
      end
      return vim.notify('agentls: no custom command /' .. o.name, vim.log.levels.ERROR)
    end
    vim.schedule(function()
      vim.ui.select(list, { prompt = 'agentls command', format_item = M.label }, go)
    end)
  end)
end

-- complete(arglead): names of the custom commands, for :AgentPrompt.
function M.complete(arglead)
  local client = agentls().client()
  if not client then return {} end
  local resp = client.request_sync('workspace/executeCommand', { command = 'agentls.prompts', arguments = {} }, 1000)
  local out = {}
  for _, p in ipairs((resp and type(resp.result) == 'table') and resp.result or {}) do
    if p.name:sub(1, #arglead) == arglead then table.insert(out, p.name) end
  end
  return out
end

-- cmd_prompt(o): :[range]AgentPrompt [NAME [ARGS]]; a range is the
-- selection (whole lines) the command's $SELECTION takes.
function M.cmd_prompt(o)
  local name, args = (o.args or ''):match('^%s*/?(%S*)%s*(.-)%s*$')
  local range
  if o.range and o.range > 0 then
    range = { start = { line = o.line1 - 1, character = 0 }, ['end'] = { line = o.line2, character = 0 } }
  end
  return M.pick({ name = name ~= '' and name or nil, args = args ~= '' and args or nil, range = range })
end

-- tool_lines(l): the agentls.tools reply as markdown lines.
function M.tool_lines(l)
  local lines = { '# Tools the model has', '' }
  for _, t in ipairs(l.tools or {}) do
    local access = t.readOnly and 'read-only' or table.concat(t.effects or {}, ', ')
    table.insert(lines, string.format('- `%s` (%s; %s): %s', t.name, t.source, access, t.description or ''))
  end
  table.insert(lines, '')
  table.insert(lines, '# Hooks')
  table.insert(lines, '')
  if #(l.hooks or {}) == 0 then table.insert(lines, 'None (the `hooks` setting is empty).') end
  for _, h in ipairs(l.hooks or {}) do
    local m = (h.matcher and h.matcher ~= '') and (' matching `' .. h.matcher .. '`') or ''
    table.insert(lines, string.format('- %s%s: `%s` (timeout %s)', h.event, m, h.command, h.timeout))
  end
  return lines
end

-- tools(cb): agentls.tools shown in a float (or split); cb(err, reply).
function M.tools(cb)
  request('agentls.tools', function(err, l)
    if err then
      vim.notify('agentls: agentls.tools failed: ' .. ui.one_line(err.message or ''), vim.log.levels.ERROR)
    elseif type(l) == 'table' then
      ui.show('tools', M.tool_lines(l), { split = agentls().config.view == 'split' })
    end
    if cb then cb(err, l) end
  end)
end

return M
