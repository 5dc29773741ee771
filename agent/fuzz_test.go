package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/tools"
)

// FuzzRepairHistory builds a history from bytes (each byte one message:
// assistant with 0-2 calls, a result for some id, a user message) and checks
// that the repaired history is valid, keeps every user message, and that
// repairing again changes nothing.
func FuzzRepairHistory(f *testing.F) {
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{0x21, 0x12, 0x12, 0x03, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := []llm.Message{{Role: llm.RoleSystem, Content: "s"}}
		users := 0
		for i, b := range data {
			id := fmt.Sprintf("c%d", b>>4)
			switch b % 4 {
			case 0:
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "u"})
				users++
			case 1:
				m := llm.Message{Role: llm.RoleAssistant}
				for k := 0; k < int(b>>6); k++ {
					m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("c%d", (int(b>>4)+k)%16), Name: "grep", Incomplete: i%5 == 4})
				}
				msgs = append(msgs, m)
			default:
				msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: id})
			}
		}
		out, _, _ := RepairHistory(msgs)
		if p := ValidHistory(out); p != "" {
			t.Fatalf("repaired history invalid: %s", p)
		}
		n := 0
		for _, m := range out {
			if m.Role == llm.RoleUser {
				n++
			}
		}
		if n != users {
			t.Fatalf("repair kept %d user messages of %d", n, users)
		}
		again, added, dropped := RepairHistory(out)
		if added+dropped != 0 || len(again) != len(out) {
			t.Fatalf("repair not idempotent: +%d -%d", added, dropped)
		}
	})
}

// BenchmarkLoopTurn measures the loop's own overhead per model turn (repair,
// token counting, tool dispatch, accounting) with an in-process model and
// tool, so the time is agentls's, not the model's.
func BenchmarkLoopTurn(b *testing.B) {
	const turns = 10
	grep := textTool("grep", true, "a.go:1: package a")
	b.ReportAllocs()
	for b.Loop() {
		resps := make([]*llm.Response, 0, turns+1)
		for i := 0; i < turns; i++ {
			resps = append(resps, calls("", call("grep", fmt.Sprintf(`{"pattern":"p%d"}`, i))))
		}
		resps = append(resps, answer("done"))
		m := &scriptModel{resps: resps}
		r := newRunner(nil, Config{MaxTurns: 50}, m, func(*Guard) []tools.Tool { return []tools.Tool{grep} })
		res, err := r.Run(context.Background(), TaskSpec{Kind: KindAsk, Prompt: "p"}, nil)
		if err != nil || res.Status != StateCompleted {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(turns+1))/1e3, "µs/turn")
}
