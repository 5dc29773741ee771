package llm

import "testing"

// TestRewriteMovesFieldsWithTheirBytes: the request body's top-level
// fields come out model, tools, messages, then the rest in their order,
// each value byte for byte as go-openai wrote it (whatever the spacing
// around it), the first of two same-named fields kept and the configured
// overrides applied; a body that is not a JSON object, or not whole, is
// sent unchanged.
func TestRewriteMovesFieldsWithTheirBytes(t *testing.T) {
	temp := 0.5
	tr, err := newTransport(nil, Config{Temperature: &temp, ExtraBody: map[string]any{"top_k": 20}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"reordered",
			`{"messages":[{"role":"user","content":"a: \"b\" {"}],"model":"m","tools":[{"x":1}],"stream":true}`,
			`{"model":"m","tools":[{"x":1}],"messages":[{"role":"user","content":"a: \"b\" {"}],"stream":true,"temperature":0.5,"top_k":20}`},
		{"spaced",
			"{ \"stream\" : false ,\n\t\"model\"\t:\n \"m\" , \"messages\" : [ 1, 2 ] }",
			`{"model":"m","messages":[ 1, 2 ],"stream":false,"temperature":0.5,"top_k":20}`},
		{"override replaces", `{"model":"m","temperature":1}`, `{"model":"m","temperature":0.5,"top_k":20}`},
		{"first of two names", `{"model":"a","model":"b"}`, `{"model":"a","temperature":0.5,"top_k":20}`},
		{"escaped name", `{"mod\u0065l":"m"}`, `{"model":"m","temperature":0.5,"top_k":20}`},
		{"empty object", `{}`, `{"temperature":0.5,"top_k":20}`},
		{"not an object", `[1,2]`, `[1,2]`},
		{"cut short", `{"model":"m","messages":[`, `{"model":"m","messages":[`},
		{"not JSON", `model=m`, `model=m`},
	} {
		if got := string(tr.rewrite([]byte(tc.in))); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
