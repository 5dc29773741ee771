// Package agentls is the root of the agentls module: a language server that
// puts a coding agent inside any editor that speaks LSP. The code lives in
// cmd/agentls, lsp, agent, tools and workspace; this file only anchors the
// module-wide tests (such as the import-direction check).
package agentls
