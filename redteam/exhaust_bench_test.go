package redteam

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/llm/fakemodel"
	"github.com/agentls/agentls/internal/procmem"
)

// Environment of the child process BenchmarkOneResponseManyReads starts:
// the scripted model's URL, the number of read_file calls, and where to
// write a heap profile (optional).
const (
	envChildModel = "AGENTLS_EXHAUST_MODEL"
	envChildCalls = "AGENTLS_EXHAUST_CALLS"
	envChildHeap  = "AGENTLS_EXHAUST_HEAP"
	envChildKiB   = "AGENTLS_EXHAUST_KIB"
)

// bigFile is the 64 KiB file every read_file call of the benchmark reads.
var bigFile = fileOf(64)

// fileOf is a text file of kib KiB, 64 bytes a line.
func fileOf(kib int) string {
	return strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 16*kib)
}

// manyReads is one model response with n read_file calls of big.txt,
// then an answer.
func manyReads(n int) []fakemodel.Turn {
	calls := make([]fakemodel.ToolCall, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i), "read_file", `{"path":"big.txt"}`)
	}
	return []fakemodel.Turn{{ToolCalls: calls}, {Text: "Read it.", FinishReason: "stop", Times: -1}}
}

// BenchmarkOneResponseManyReads runs one model response holding 1,000 or
// 5,000 read_file calls of a 64 KiB file (and 32 of a 2 MiB file, the
// largest read whole) through a real server, in a child
// process of its own (the scripted model stays in this one, so the
// request bodies it keeps are not counted), and reports the child's peak
// RSS (VmHWM) and the size of the session database and recordings.
//
//	go test -run '^$' -bench OneResponseManyReads -benchtime 1x ./redteam/
//
// AGENTLS_EXHAUST_HEAP=/tmp/heap.pprof writes the child's heap profile at
// the end of the task (go tool pprof -sample_index=alloc_space).
func BenchmarkOneResponseManyReads(b *testing.B) {
	for _, tc := range []struct{ n, kib int }{{1000, 64}, {5000, 64}, {32, 2048}} {
		n := tc.n
		b.Run(fmt.Sprintf("%dx%dKiB", n, tc.kib), func(b *testing.B) {
			for range b.N {
				model, err := fakemodel.Start(fakemodel.Script{Turns: manyReads(n)})
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestExhaustChild$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), envChildModel+"="+model.URL(), envChildCalls+"="+strconv.Itoa(n), envChildKiB+"="+strconv.Itoa(tc.kib))
				out, err := cmd.CombinedOutput()
				model.Close()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, tail(out, 4000))
				}
				m := childFigures(out)
				if m == nil {
					b.Fatalf("child reported no figures:\n%s", tail(out, 4000))
				}
				b.ReportMetric(m["vmhwm_kb"]/1024, "peak-RSS-MB")
				b.ReportMetric(m["db_bytes"]/(1<<20), "db-MB")
				b.ReportMetric(m["rec_bytes"]/(1<<20), "recordings-MB")
			}
		})
	}
}

// childFigures parses the child's "exhaust:" line.
func childFigures(out []byte) map[string]float64 {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "exhaust: ")
		if i < 0 {
			continue
		}
		m := map[string]float64{}
		for _, f := range strings.Fields(line[i+len("exhaust: "):]) {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseFloat(v, 64)
			if err == nil {
				m[k] = n
			}
		}
		return m
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// TestExhaustChild is the child of BenchmarkOneResponseManyReads; it
// does nothing in an ordinary test run.
func TestExhaustChild(t *testing.T) {
	url, n := os.Getenv(envChildModel), os.Getenv(envChildCalls)
	if url == "" {
		t.Skip("only run by BenchmarkOneResponseManyReads")
	}
	kib, _ := strconv.Atoi(os.Getenv(envChildKiB))
	s := newServer(t, nil, map[string]string{"big.txt": fileOf(max(kib, 1))}, serverOpts{settings: map[string]any{"baseURL": url}})
	if _, err := s.run(t, map[string]any{"prompt": "read big.txt " + n + " times", "mode": "ask"}); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv(envChildHeap); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	fmt.Printf("exhaust: calls=%s vmhwm_kb=%d db_bytes=%d rec_bytes=%d\n", n, procmem.Peak(t, procmem.Self)>>10, dirSize(filepath.Join(s.root, ".agentls"), "agentls.db"), dirSize(filepath.Join(s.root, ".agentls", "recordings"), ""))
}

// dirSize is the total size of the files of dir whose names start with
// prefix (the database with its -wal and -shm files).
func dirSize(dir, prefix string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), prefix) {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			total += fi.Size()
		}
		return nil
	})
	return total
}
