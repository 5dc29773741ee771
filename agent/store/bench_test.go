package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentls/agentls/internal/benchstat"
)

var benchWords = strings.Fields(`func return if err nil the file package import context string int error
	main.go server handler request response test value index path workspace range edit line column read write
	tool model call result plan item status done pending go build run vet fmt println struct type interface`)

// realisticMessage is one history entry of 1-2 KB: text like code and prose,
// every third an assistant message with a tool call, every third a tool result.
func realisticMessage(r *rand.Rand, seq int) Message {
	var b strings.Builder
	size := 1024 + r.IntN(1024)
	for b.Len() < size {
		b.WriteString(benchWords[r.IntN(len(benchWords))])
		if r.IntN(12) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
	}
	m := Message{Seq: seq, CreatedAt: time.UnixMilli(1_800_000_000_000 + int64(seq))}
	switch seq % 3 {
	case 0:
		m.Role, m.Content = "user", b.String()
	case 1:
		m.Role, m.Content = "assistant", b.String()[:size/2]
		m.ToolCalls = []CallRequest{{ID: fmt.Sprintf("call_%d", seq), Name: "read_file", Arguments: `{"path":"server/handler.go","start":1,"end":120}`}}
		m.ModelCall, m.Usage, m.Duration = true, Usage{InputTokens: 4000 + seq, OutputTokens: 120, CachedTokens: 3500}, 900*time.Millisecond
	default:
		m.Role, m.Content, m.ToolCallID, m.Name = "tool", b.String(), fmt.Sprintf("call_%d", seq-1), "read_file"
	}
	return m
}

// BenchmarkStoreAppendMessage measures the store's overhead per message
// through the public API: AppendMessage of a batch, then Flush, so the
// writer goroutine's commit is included. It reports the median over batches
// of the per-message time (median-us/msg) and the median time of one
// message appended and flushed on its own (median-us/flushed-msg), the cost
// of a checkpoint the loop waits for.
func BenchmarkStoreAppendMessage(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "agentls.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	must(b, s.CreateTask(Task{ID: "T", Prompt: "bench"}))
	flushTest(b, s)
	r := rand.New(rand.NewPCG(1, 2))
	const pool = 512
	msgs := make([]Message, pool)
	for i := range msgs {
		msgs[i] = realisticMessage(r, i)
	}
	const batch = 32
	var perMsg, flushed []float64
	seq := 0
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(batch, b.N-i)
		start := time.Now()
		for range n {
			m := msgs[seq%pool]
			m.Seq = seq
			seq++
			if err := s.AppendMessage("T", m); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		perMsg = append(perMsg, float64(time.Since(start).Microseconds())/float64(n))
		i += n

		// One message appended and flushed alone (not counted in b.N).
		m := msgs[seq%pool]
		m.Seq = seq
		seq++
		start = time.Now()
		if err := s.AppendMessage("T", m); err != nil {
			b.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		flushed = append(flushed, float64(time.Since(start).Microseconds()))
	}
	b.StopTimer()
	b.ReportMetric(benchstat.Median(perMsg), "median-us/msg")
	b.ReportMetric(benchstat.Median(flushed), "median-us/flushed-msg")
}

// BenchmarkStoreSizePer1000Messages writes 1,000 realistic messages (1-2 KB
// of content each) with their tool-call records, closes the store (which
// checkpoints the WAL) and reports the database file size.
func BenchmarkStoreSizePer1000Messages(b *testing.B) {
	ctx := context.Background()
	var size, content int64
	for i := 0; i < b.N; i++ {
		path := filepath.Join(b.TempDir(), fmt.Sprint("agentls", i, ".db"))
		s, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		must(b, s.CreateTask(Task{ID: "T", Prompt: "bench"}))
		r := rand.New(rand.NewPCG(3, 4))
		content = 0
		for q := range 1000 {
			m := realisticMessage(r, q)
			content += int64(len(m.Content))
			must(b, s.AppendMessage("T", m))
			if m.Role == "tool" {
				must(b, s.RecordToolCall("T", ToolCall{CallID: m.ToolCallID, Name: m.Name, Args: []byte(`{"path":"server/handler.go"}`), Duration: time.Millisecond, Summary: headTail(m.Content, 200)}))
			}
		}
		must(b, s.Close(ctx))
		size = 0
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if fi, err := os.Stat(path + suffix); err == nil {
				size += fi.Size()
			}
		}
	}
	b.ReportMetric(float64(size), "bytes/1000msgs")
	b.ReportMetric(float64(content)/1000, "content-bytes/msg")
}
