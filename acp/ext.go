package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// The v1 schema has parts the SDK (github.com/coder/acp-go-sdk v0.13.0, the
// newest the module proxy serves) has no types for. They are spoken here,
// on the wire, and nowhere else:
//
//   - session/delete: a request the SDK would answer "method not found";
//     the input filter hands it to intercept, which answers it itself.
//   - agentCapabilities.sessionCapabilities.delete in the initialize reply:
//     patchOutgoing adds it to the SDK's reply on its way out.
//   - clientCapabilities.session.configOptions.boolean in the initialize
//     request: noteClientCapabilities reads it from the raw line.
//   - the session scope (sessionId) of elicitation/create, which the SDK's
//     form has no field for: elicitationScope puts it in _meta under a key
//     of agentls's own, and patchOutgoing moves it to its place.

// methodSessionDelete is the v1 method that deletes a session.
const methodSessionDelete = "session/delete"

// intercept handles a request the SDK does not know; false passes the
// message on to the SDK.
func (a *Agent) intercept(method string, id json.RawMessage, line []byte) bool {
	if method != methodSessionDelete || len(id) == 0 || string(id) == "null" {
		return false
	}
	var req struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &req); err != nil || req.Params.SessionID == "" {
		a.reply(id, nil, sdk.NewInvalidParams(map[string]any{"error": "session/delete needs a sessionId"}))
		return true
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.DeleteSession(ctx, req.Params.SessionID); err != nil {
			a.reply(id, nil, toRequestError(err))
			return
		}
		a.reply(id, struct{}{}, nil)
	}()
	return true
}

// toRequestError is err as a JSON-RPC error.
func toRequestError(err error) *sdk.RequestError {
	if re, ok := err.(*sdk.RequestError); ok {
		return re
	}
	return sdk.NewInternalError(map[string]any{"error": err.Error()})
}

// reply writes the answer to request id: result, or rerr when it is set.
func (a *Agent) reply(id json.RawMessage, result any, rerr *sdk.RequestError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	b, err := json.Marshal(msg)
	if err != nil {
		a.log.Warn("acp: reply not encoded", "error", err)
		return
	}
	<-a.ready
	if _, err := a.out.Write(append(b, '\n')); err != nil {
		a.log.Debug("acp: reply not sent", "error", err)
	}
}

// noteClientCapabilities reads from the raw initialize request what the
// SDK's ClientCapabilities has no field for.
func (a *Agent) noteClientCapabilities(line []byte) {
	var req struct {
		Params struct {
			ClientCapabilities struct {
				Session *struct {
					ConfigOptions *struct {
						Boolean json.RawMessage `json:"boolean"`
					} `json:"configOptions"`
				} `json:"session"`
			} `json:"clientCapabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil {
		return
	}
	s := req.Params.ClientCapabilities.Session
	on := s != nil && s.ConfigOptions != nil && len(s.ConfigOptions.Boolean) > 0 && string(s.ConfigOptions.Boolean) != "null"
	a.boolOptions.Store(on)
}

// scopeKey is the _meta key that carries an elicitation's session to
// patchOutgoing.
const scopeKey = "agentls.elicitationSessionId"

// elicitationScope is the _meta of an elicitation of session id.
func elicitationScope(id string) map[string]any { return map[string]any{scopeKey: id} }

// patchOutgoing adds sessionCapabilities.delete to the initialize reply
// (the only message that carries agentCapabilities) and the session scope
// to elicitation/create; every other message passes unchanged.
func patchOutgoing(msg []byte) []byte {
	if bytes.Contains(msg, []byte(`"`+scopeKey+`"`)) {
		return patchElicitation(msg)
	}
	if !bytes.Contains(msg, []byte(`"agentCapabilities"`)) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["result"] == nil {
		return msg
	}
	out, err := setPath(m["result"], []string{"agentCapabilities", "sessionCapabilities", "delete"}, json.RawMessage(`{}`))
	if err != nil {
		return msg
	}
	m["result"] = out
	b, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return append(b, '\n')
}

// setPath sets the member at path of JSON object doc to v, making the
// objects on the way.
func setPath(doc json.RawMessage, path []string, v json.RawMessage) (json.RawMessage, error) {
	if len(path) == 0 {
		return v, nil
	}
	obj := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(doc)) > 0 && string(doc) != "null" {
		if err := json.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("not an object: %w", err)
		}
	}
	inner, err := setPath(obj[path[0]], path[1:], v)
	if err != nil {
		return nil, err
	}
	obj[path[0]] = inner
	return json.Marshal(obj)
}

// patchElicitation moves an elicitation/create's session from _meta to
// params.sessionId.
func patchElicitation(msg []byte) []byte {
	var m struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      json.RawMessage            `json:"id"`
		Method  string                     `json:"method"`
		Params  map[string]json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != sdk.ClientMethodElicitationCreate || m.Params == nil {
		return msg
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m.Params["_meta"], &meta) != nil || meta[scopeKey] == nil {
		return msg
	}
	m.Params["sessionId"] = meta[scopeKey]
	delete(meta, scopeKey)
	if len(meta) == 0 {
		delete(m.Params, "_meta")
	} else {
		b, _ := json.Marshal(meta)
		m.Params["_meta"] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return append(b, '\n')
}
