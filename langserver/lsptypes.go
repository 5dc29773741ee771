package langserver

import (
	"encoding/json"

	"go.lsp.dev/uri"

	"github.com/agentls/agentls/workspace"
)

// The LSP results the tools read, decoded from raw JSON: the same bytes
// come from agentls's own servers and, forwarded, from the editor's.

// Positions and ranges are workspace.Position and workspace.Range: the
// same JSON as LSP's, one type for the whole module.

// Location is a range in a document.
type Location struct {
	URI   uri.URI         `json:"uri"`
	Range workspace.Range `json:"range"`
}

// locationLink is the LocationLink form of a definition result.
type locationLink struct {
	TargetURI            uri.URI         `json:"targetUri"`
	TargetSelectionRange workspace.Range `json:"targetSelectionRange"`
}

// Diagnostic is one problem a server published.
type Diagnostic struct {
	Range    workspace.Range `json:"range"`
	Severity int             `json:"severity"`
	Message  string          `json:"message"`
	Source   string          `json:"source,omitempty"`
}

// documentSymbol is either form of a textDocument/documentSymbol item
// (DocumentSymbol with children, or SymbolInformation with a location).
type documentSymbol struct {
	Name           string           `json:"name"`
	Kind           int              `json:"kind"`
	Detail         string           `json:"detail"`
	Range          workspace.Range  `json:"range"`
	SelectionRange *workspace.Range `json:"selectionRange"`
	Children       []documentSymbol `json:"children"`
	Location       *Location        `json:"location"`
	ContainerName  string           `json:"containerName"`
}

// workspaceSymbol is a workspace/symbol item (SymbolInformation or
// WorkspaceSymbol, whose location may lack a range).
type workspaceSymbol struct {
	Name          string `json:"name"`
	Kind          int    `json:"kind"`
	ContainerName string `json:"containerName"`
	Location      struct {
		URI   uri.URI          `json:"uri"`
		Range *workspace.Range `json:"range"`
	} `json:"location"`
}

// hover is a textDocument/hover result.
type hover struct {
	Contents json.RawMessage `json:"contents"`
}

// callHierarchyItem and incomingCall are the call hierarchy's types.
type callHierarchyItem struct {
	Name           string          `json:"name"`
	Kind           int             `json:"kind"`
	Detail         string          `json:"detail"`
	URI            uri.URI         `json:"uri"`
	Range          workspace.Range `json:"range"`
	SelectionRange workspace.Range `json:"selectionRange"`
	Data           json.RawMessage `json:"data,omitempty"`
}

type incomingCall struct {
	From       callHierarchyItem `json:"from"`
	FromRanges []workspace.Range `json:"fromRanges"`
}

// textEdit and workspaceEdit are a rename's result.
type textEdit struct {
	Range   workspace.Range `json:"range"`
	NewText string          `json:"newText"`
}

type workspaceEdit struct {
	Changes         map[uri.URI][]textEdit `json:"changes"`
	DocumentChanges []json.RawMessage      `json:"documentChanges"`
}

// textDocumentEdit is the documentChanges form of one file's edits; the
// other forms (create, rename, delete files) carry a "kind".
type textDocumentEdit struct {
	Kind         string `json:"kind"`
	TextDocument struct {
		URI     uri.URI `json:"uri"`
		Version *int32  `json:"version"`
	} `json:"textDocument"`
	Edits []textEdit `json:"edits"`
}

// symbolKinds names the LSP SymbolKind values.
var symbolKinds = map[int]string{
	1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property", 8: "field",
	9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable", 14: "constant", 15: "string",
	16: "number", 17: "boolean", 18: "array", 19: "object", 20: "key", 21: "null", 22: "enum member",
	23: "struct", 24: "event", 25: "operator", 26: "type parameter",
}

func kindName(k int) string {
	if n, ok := symbolKinds[k]; ok {
		return n
	}
	return "symbol"
}
