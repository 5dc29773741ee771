package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// nudgeCase is one final answer of the corpus in testdata/nudges.txt.
type nudgeCase struct {
	line    int
	want    string // none | evidence | nochange
	spec    TaskSpec
	calls   []callRecord
	changed int
	answer  string
}

func loadNudgeCorpus(t *testing.T) []nudgeCase {
	t.Helper()
	data, err := os.ReadFile("testdata/nudges.txt")
	if err != nil {
		t.Fatal(err)
	}
	var cases []nudgeCase
	var cur *nudgeCase
	var body []string
	flush := func() {
		if cur != nil {
			cur.answer = strings.TrimSpace(strings.Join(body, "\n"))
			cases = append(cases, *cur)
		}
		body = nil
	}
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "=== "):
			flush()
			f := strings.Fields(l[4:])
			if len(f) < 3 {
				t.Fatalf("nudges.txt:%d: header %q wants WANT KIND CALLS", i+1, l)
			}
			cur = &nudgeCase{line: i + 1, want: f[0], spec: TaskSpec{Kind: Kind(f[1])}}
			if f[2] != "-" {
				for _, name := range strings.Split(f[2], ",") {
					c := callRecord{Tool: name, Args: "{}"}
					if name == "grep" || name == "list_files" {
						c.HasScope = true // over the whole workspace
					}
					cur.calls = append(cur.calls, c)
				}
			}
			if len(f) > 3 && f[3] == "changed" {
				cur.changed = 1
			}
		case cur == nil:
		case len(body) == 0 && strings.HasPrefix(l, "prompt: "):
			cur.spec.Prompt = strings.TrimPrefix(l, "prompt: ")
		case len(body) == 0 && strings.HasPrefix(l, "file: "):
			cur.spec.Context.File = strings.TrimPrefix(l, "file: ")
		case len(body) == 0 && strings.HasPrefix(l, "selection: "):
			cur.spec.Context.Selection = strings.TrimPrefix(l, "selection: ")
		case strings.HasPrefix(l, "#") && len(body) == 0:
		default:
			body = append(body, l)
		}
	}
	flush()
	return cases
}

// nudgeOf is what the final gate makes of an answer, in the gate's order:
// the evidence rule (basicGate), then an edit task's claim of a change
// when no file changed (asked once).
func nudgeOf(c nudgeCase) string {
	if evidenceGap(c.answer, c.spec, c.calls) != "" {
		return "evidence"
	}
	if c.spec.Kind == KindEdit && c.changed == 0 && claimsChangeMade(c.answer) {
		return "nochange"
	}
	return "none"
}

// TestNudgesSpareOrdinaryAnswers: over a corpus of final answers of the
// shapes users meet (answers after reading, explanations in edit
// sessions, "nothing found" after a search, honest "no change needed",
// answers that quote code), no nudge fires: each would cost a paid model
// call and show the user two answers. The answers the nudges exist for (a
// "nothing found" no search backs, a change claimed but not made) still
// draw theirs.
func TestNudgesSpareOrdinaryAnswers(t *testing.T) {
	cases := loadNudgeCorpus(t)
	tally := map[string][2]int{} // want -> {cases, matched}
	for _, c := range cases {
		got := nudgeOf(c)
		n := tally[c.want]
		n[0]++
		if got == c.want {
			n[1]++
		} else {
			t.Errorf("nudges.txt:%d (%s task, prompt %q): nudge %q; want %q\nanswer: %s", c.line, c.spec.Kind, c.spec.Prompt, got, c.want, c.answer)
		}
		tally[c.want] = n
	}
	if tally["none"][0] < 100 {
		t.Errorf("the corpus has %d ordinary answers; it must hold at least 100", tally["none"][0])
	}
	if tally["evidence"][0] == 0 || tally["nochange"][0] == 0 {
		t.Errorf("the corpus lacks the cases the nudges are for: %v", tally)
	}
	out, _ := json.Marshal(tally)
	t.Logf("nudge corpus (cases, as expected): %s", out)
	fmt.Fprintf(os.Stderr, "nudges on ordinary answers: %d of %d; on the cases they are for: %d of %d\n",
		tally["none"][0]-tally["none"][1], tally["none"][0],
		tally["evidence"][1]+tally["nochange"][1], tally["evidence"][0]+tally["nochange"][0])
}
