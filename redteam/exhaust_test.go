package redteam

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/agent/store"
)

// storeLimit is the most the session database (with its write-ahead log)
// may take after one attack: "a few MB", against the 417 MB one response
// of 1,000 reads took before calls per response and stored bytes per task
// were bounded.
const storeLimit = 16 << 20

// maxRan is the most tool calls of one response that may run.
const maxRan = 32

// TestResourceExhaustion: one model response, however many tool calls or
// bytes it holds, must not take the server's memory or the session store
// without bound. Held means: the calls past the cap were refused with a
// result the model can act on (every call has its result), the store
// stayed under storeLimit, and the server answers the next task.
func TestResourceExhaustion(t *testing.T) {
	attempt(t, famExhaust, "1,000 read_file calls of a 64 KiB file in one response", func(t *testing.T) outcome {
		return flood(t, manyCalls(1000, "read_file", `{"path":"big.txt"}`), map[string]string{"big.txt": bigFile})
	})
	attempt(t, famExhaust, "5,000 read_file calls of a 64 KiB file in one response", func(t *testing.T) outcome {
		return flood(t, manyCalls(5000, "read_file", `{"path":"big.txt"}`), map[string]string{"big.txt": bigFile})
	})
	attempt(t, famExhaust, "100 calls with 32 KiB arguments each", func(t *testing.T) outcome {
		junk := strings.Repeat("A", 32<<10)
		return flood(t, manyCalls(100, "read_file", `{"path":"big.txt","junk":"`+junk+`"}`), map[string]string{"big.txt": bigFile})
	})
	attempt(t, famExhaust, "500 update_plan calls of 20 items each", func(t *testing.T) outcome {
		var items []string
		for i := range 20 {
			items = append(items, fmt.Sprintf(`{"id":"%d","text":"step %d of a very long plan that never ends","status":"pending"}`, i, i))
		}
		return flood(t, manyCalls(500, "update_plan", `{"items":[`+strings.Join(items, ",")+`]}`), nil)
	})
	attempt(t, famExhaust, "1,000 grep calls matching every line of a 64 KiB file", func(t *testing.T) outcome {
		return flood(t, manyCalls(1000, "grep", `{"pattern":"(a|b|c|d|e|f|[0-9])+","limit":1000}`), map[string]string{"big.txt": bigFile})
	})
	attempt(t, famExhaust, "grep patterns built to explode: groups 5,000 deep, repetitions of repetitions", func(t *testing.T) outcome {
		deep := strings.Repeat("(", 5000) + "a" + strings.Repeat(")", 5000)
		var calls []fakemodel.ToolCall
		for i, p := range []string{deep, "(a{1000}){1000}", "((a*)*)*b", "(x+x+)+y", strings.Repeat("(a|aa)*", 200) + "c"} {
			args, _ := json.Marshal(map[string]any{"pattern": p})
			calls = append(calls, call(fmt.Sprintf("g%d", i), "grep", string(args)))
		}
		return floodTurns(t, []fakemodel.Turn{{ToolCalls: calls}}, map[string]string{"big.txt": bigFile, "a.txt": strings.Repeat("a", 1<<20)}, len(calls))
	})
	attempt(t, famExhaust, "the largest read_file result, 30 times a response for 4 responses", func(t *testing.T) outcome {
		// Within the cap each time: the store's bound per task must hold.
		// Each call reads other lines of one file (no repeated call).
		var lines strings.Builder
		for i := range 40000 {
			fmt.Fprintf(&lines, "line %6d of a file read only to fill the session store\n", i)
		}
		files := map[string]string{"huge.txt": lines.String()}
		var turns []fakemodel.Turn
		for r := range 4 {
			var calls []fakemodel.ToolCall
			for i := range 30 {
				calls = append(calls, call(fmt.Sprintf("r%dc%d", r, i), "read_file", fmt.Sprintf(`{"path":"huge.txt","offset":%d,"limit":4000}`, 1+r*30+i*1000%36000)))
			}
			turns = append(turns, fakemodel.Turn{ToolCalls: calls})
		}
		return floodTurns(t, turns, files, 0)
	})
}

// manyCalls is one response of n calls of tool with args.
func manyCalls(n int, tool, args string) []fakemodel.Turn {
	calls := make([]fakemodel.ToolCall, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i), tool, args)
	}
	return []fakemodel.Turn{{ToolCalls: calls}}
}

// flood runs one task whose first response is turns[0], and judges it.
func flood(t *testing.T, turns []fakemodel.Turn, files map[string]string) outcome {
	return floodTurns(t, turns, files, len(turns[0].ToolCalls))
}

// floodTurns runs one task of the responses turns then an answer, then a
// second task, and judges the first by the request that followed its first
// response (when calls > 0), the store's size and the second task's
// answer.
func floodTurns(t *testing.T, turns []fakemodel.Turn, files map[string]string, calls int) outcome {
	turns = append(turns, fakemodel.Turn{Text: "Done.", FinishReason: "stop", Times: -1})
	for i := range turns {
		turns[i].ChunkSize = 1 << 16 // the stream of a flood fits the client's limits
	}
	s := newServer(t, turns, files, serverOpts{})
	first, err := s.run(t, map[string]any{"prompt": "look at the files", "mode": "ask"})
	if err != nil {
		return escaped("the task failed: %v", err)
	}
	var problems []string
	if calls > 0 {
		ran, refused, answered := results(t, s, first.TaskID)
		if ran > maxRan {
			problems = append(problems, fmt.Sprintf("%d of %d calls ran", ran, calls))
		}
		if answered != calls {
			problems = append(problems, fmt.Sprintf("%d of %d calls have a result", answered, calls))
		}
		if refused > 0 && refused != calls-ran {
			problems = append(problems, fmt.Sprintf("%d refused, %d ran, of %d", refused, ran, calls))
		}
		if refused > 0 && !strings.Contains(s.fromServer()+reportOf(s, first.TaskID), "were refused") {
			problems = append(problems, "neither the editor nor the report tells that calls were refused")
		}
		if len(problems) == 0 {
			defer func() { t.Logf("%d calls ran, %d were refused", ran, refused) }()
		}
	}
	size := dirSize(filepath.Join(s.root, ".agentls"), "agentls.db")
	if size > storeLimit {
		problems = append(problems, fmt.Sprintf("the session database grew to %.1f MB", float64(size)/(1<<20)))
	}
	r, err := s.run(t, map[string]any{"prompt": "are you there?", "mode": "ask"})
	if err != nil || r.Answer != "Done." {
		problems = append(problems, fmt.Sprintf("the next task did not answer: %+v %v", r, err))
	}
	if len(problems) > 0 {
		return escaped("%s", strings.Join(problems, "; "))
	}
	return held("the store holds %.1f MB and the next task answered", float64(size)/(1<<20))
}

// reportOf is the text of a task's report, "" when there is none.
func reportOf(s *server, taskID string) string {
	b, _ := os.ReadFile(filepath.Join(s.root, ".agentls", "tasks", taskID+".md"))
	return string(b)
}

// results counts the tool results of a task as the session store holds
// them (the history the model gets may be compacted since): those that
// ran, those refused, and all.
func results(t *testing.T, s *server, taskID string) (ran, refused, all int) {
	st, err := store.Open(ctxFor(t), store.DefaultPath(s.root), store.Options{})
	if err != nil {
		t.Fatalf("open the session store: %v", err)
	}
	defer st.Close(ctxFor(t))
	rec, err := st.LoadTask(ctxFor(t), taskID)
	if err != nil {
		t.Fatalf("load task %s: %v", taskID, err)
	}
	for _, m := range rec.Messages {
		if m.Role != "tool" {
			continue
		}
		all++
		if strings.HasPrefix(m.Content, "not run: at most") && strings.Contains(m.Content, "call the rest in your next response") {
			refused++
		} else {
			ran++
		}
	}
	return ran, refused, all
}
