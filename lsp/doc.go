// Package lsp is the agent's LSP face: the agentls.* commands and code
// actions, and the session.Port each task talks through (progress as
// $/progress, edits as workspace/applyEdit, approvals as
// window/showMessageRequest, the agentls/* requests the plugins answer).
// It holds no agent policy (that is the host's, agent/session) and no
// protocol machinery (that is lsp/server: lifecycle, document sync, the
// command registry, progress; lsp/wire: framing).
package lsp
