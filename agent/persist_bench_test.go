package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/store"
)

// BenchmarkTaskPersistence runs a scripted task of 10 tool rounds (23
// messages: system, task, 10 calls and their results, the answer) without
// and with the session store, and reports the wall time per message; the
// difference is what persistence (writes, the flush before each round's
// tool calls and at the end) costs the loop.
func BenchmarkTaskPersistence(b *testing.B) {
	result := strings.Repeat("match: some/file.go:12: a line of code\n", 25) // ~1 KB
	for _, persisted := range []bool{false, true} {
		name := "memory"
		if persisted {
			name = "store"
		}
		b.Run(name, func(b *testing.B) {
			var st *store.Store
			if persisted {
				s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "s.db"), store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close(context.Background())
				st = s
			}
			const rounds = 10
			msgs := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var resps []*llm.Response
				for k := 0; k < rounds; k++ {
					resps = append(resps, calls("", call("grep", fmt.Sprintf(`{"pattern":"p%d"}`, k))))
				}
				resps = append(resps, answer("done"))
				m := &scriptModel{resps: resps}
				r := newRunner(st, Config{Counter: charCounter{}, NoRecord: true}, m, staticTools(textTool("grep", true, result)))
				res, err := r.Run(context.Background(), TaskSpec{Prompt: "find things"}, nil)
				if err != nil || res.Status != StateCompleted {
					b.Fatalf("%v %+v", err, res)
				}
				msgs += 3 + 2*rounds
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(msgs), "µs/msg")
		})
	}
}
