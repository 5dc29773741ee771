-- v4: when a task was undone. A task whose edits were reverted
-- (agentls.undo, `agentls undo`, ACP /undo) is listed as undone everywhere,
-- never as the completed change it no longer is.

ALTER TABLE tasks ADD COLUMN undone_at INTEGER;
