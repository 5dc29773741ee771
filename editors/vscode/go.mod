// This go.mod only fences the VS Code extension off from the agentls Go
// module: npm packages under node_modules may ship .go files (flatted does),
// and `go test ./...` / `go vet ./...` must not compile them.
module github.com/agentls/agentls/editors/vscode

go 1.26
