package wire

import (
	stdjson "encoding/json"

	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// Codec is the jsonrpc2 payload codec for LSP connections. It marshals with
// protocol.Marshal/Unmarshal, which know the generated union types (a
// TextDocumentContentChangeEvent, a ProgressToken, ...); the equivalent codec
// inside go.lsp.dev/protocol is unexported. Raw JSON values pass through
// verbatim. The zero value is ready to use and safe for concurrent use.
type Codec struct{}

var _ jsonrpc2.Codec = Codec{}

// Marshal implements jsonrpc2.Codec.
func (Codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		return rawOrNull(m), nil
	case stdjson.RawMessage:
		return rawOrNull(m), nil
	case jsontext.Value:
		return rawOrNull(m), nil
	}
	return protocol.Marshal(v)
}

// Unmarshal implements jsonrpc2.Codec. Raw destinations receive a copy.
func (Codec) Unmarshal(data []byte, v any) error {
	switch p := v.(type) {
	case *jsonrpc2.RawMessage:
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	case *stdjson.RawMessage:
		*p = append(stdjson.RawMessage(nil), data...)
		return nil
	case *jsontext.Value:
		*p = append(jsontext.Value(nil), data...)
		return nil
	}
	return protocol.Unmarshal(data, v)
}

func rawOrNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}
