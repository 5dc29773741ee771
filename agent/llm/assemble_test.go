package llm

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var seedStreams = []string{
	`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}
{"choices":[{"index":0,"delta":{"content":"lo"}}]}
{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":8}}}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"grep","arguments":""}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pat"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"read","arguments":"{}"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"x"}}]}}]}
{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning":"hmm","reasoning_content":"so"}}]}
{"choices":[{"index":1,"delta":{"content":"other choice"}}]}
not json
{"choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{}"}},"finish_reason":"function_call"}]}`,
}

// TestAssemblerKeysCallsByIndexAndID covers servers that send parallel
// calls at index 0 with different IDs, or no index.
func TestAssemblerKeysCallsByIndexAndID(t *testing.T) {
	var a assembler
	for _, line := range strings.Split(seedStreams[1], "\n") {
		if err := a.add([]byte(line), func(Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	msg, finish, err := a.result(false)
	if err != nil {
		t.Fatal(err)
	}
	if finish != FinishLength || len(msg.ToolCalls) != 2 {
		t.Fatalf("finish %q calls %+v", finish, msg.ToolCalls)
	}
	if c := msg.ToolCalls[0]; c.ID != "a" || c.Name != "grep" || c.Arguments != `{"pat` || !c.Incomplete {
		t.Errorf("call 0 = %+v", c)
	}
	if c := msg.ToolCalls[1]; c.ID != "b" || c.Name != "read" || c.Arguments != `{}x` || !c.Incomplete {
		t.Errorf("call 1 = %+v", c)
	}
	var b assembler
	if _, _, err := b.result(false); !errors.Is(err, errStreamBroken) {
		t.Errorf("an empty stream without [DONE] = %v; want errStreamBroken", err)
	}
}

// FuzzAssembler feeds arbitrary chunk lines: the assembler must never
// panic, must report exactly the text it keeps, and must never return a
// call of a cut answer as complete.
func FuzzAssembler(f *testing.F) {
	for _, s := range seedStreams {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Add([]byte("\x00\xff{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-5}]}}]}"), false)
	f.Fuzz(func(t *testing.T, data []byte, sawDone bool) {
		var a assembler
		var text, reasoning strings.Builder
		emit := func(e Event) {
			switch e.Kind {
			case EventText:
				text.WriteString(e.Text)
			case EventReasoning:
				reasoning.WriteString(e.Text)
			}
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if err := a.add(line, emit); err != nil && !errors.Is(err, errBadChunk) {
				t.Fatalf("add: unexpected error kind %v", err)
			}
		}
		msg, finish, err := a.result(sawDone)
		if err != nil {
			if !errors.Is(err, errStreamBroken) || sawDone {
				t.Fatalf("result: %v (sawDone %t)", err, sawDone)
			}
			return
		}
		if msg.Content != text.String() || msg.Reasoning != reasoning.String() {
			t.Fatalf("kept %q/%q; streamed %q/%q", msg.Content, msg.Reasoning, text.String(), reasoning.String())
		}
		for _, c := range msg.ToolCalls {
			if c.ID == "" {
				t.Fatalf("call without ID: %+v", c)
			}
			if finish == FinishLength && !c.Incomplete {
				t.Fatalf("cut answer with a complete call: %+v", c)
			}
		}
		if len(msg.ToolCalls) > 0 && finish == FinishStop {
			t.Fatalf("calls with finish stop")
		}
	})
}
