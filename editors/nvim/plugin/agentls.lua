-- agentls user commands. Loaded by Neovim from the runtimepath; the client
-- starts when require('agentls').setup() is called (see :help agentls).
if vim.g.loaded_agentls then return end
vim.g.loaded_agentls = 1

if vim.fn.has('nvim-0.7') ~= 1 then
  vim.notify('agentls needs Neovim 0.7 or newer', vim.log.levels.ERROR)
  return
end

local function a() return require('agentls') end

local function ids(arglead) return a().complete_task_ids(arglead) end
local cmd = vim.api.nvim_create_user_command

cmd('AgentRun', function(o) a().cmd_run(o) end,
  { nargs = '+', range = true, desc = 'agentls: run a task with this prompt' })
cmd('AgentAsk', function(o) a().cmd_ask(o) end,
  { nargs = '*', range = true, desc = 'agentls: ask about the symbol under the cursor or the selection' })
cmd('AgentPlan', function(o) a().plan(o.args) end,
  { nargs = '+', desc = 'agentls: plan a change (read-only); then execute the plan' })
cmd('AgentExecute', function(o) a().execute_plan(o.args) end,
  { nargs = '?', complete = ids, desc = 'agentls: execute a plan (the last one by default)' })
cmd('AgentCancel', function(o) a().cancel(o.args) end,
  { nargs = '?', complete = ids, desc = 'agentls: cancel a task (this editor\'s latest by default)' })
cmd('AgentTasks', function() a().cmd_tasks() end,
  { nargs = 0, desc = 'agentls: list tasks, earlier sessions too' })
cmd('AgentReport', function(o) a().report(o.args) end,
  { nargs = '?', complete = ids, desc = 'agentls: show a task\'s answer and report (the last one by default)' })
cmd('AgentUndo', function(o) a().undo(o.args) end,
  { nargs = '?', complete = ids, desc = 'agentls: revert every edit of a task (the last by default)' })
cmd('AgentPrompt', function(o) require('agentls.extend').cmd_prompt(o) end,
  { nargs = '*', range = true, complete = function(l) return require('agentls.extend').complete(l) end,
    desc = 'agentls: run a custom command (prompt file); without a name, pick one' })
cmd('AgentTools', function() require('agentls.extend').tools() end,
  { nargs = 0, desc = 'agentls: list the tools the model has and the hooks' })
cmd('AgentResume', function(o) a().resume(o.args) end,
  { nargs = '?', complete = ids, desc = 'agentls: continue an interrupted task (the newest by default)' })

if vim.g.agentls_autosetup ~= 0 and vim.g.agentls_autosetup ~= false then
  -- setup() with defaults unless the user calls it from their config first.
  vim.api.nvim_create_autocmd('VimEnter', {
    once = true,
    callback = function()
      if not a()._setup_done then a().setup(vim.g.agentls_config or {}) end
    end,
  })
end
