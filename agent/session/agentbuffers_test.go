package session

import "testing"

// TestAgentTextsKnowsWhichBuffersHoldOnlyAgentEdits: the host's record of
// the texts agent edits left in buffers, across tasks, decides which
// buffers may be saved before a command without asking.
func TestAgentTextsKnowsWhichBuffersHoldOnlyAgentEdits(t *testing.T) {
	const f = "/ws/main.go"
	type edit struct{ prev, disk, next string }
	for _, tc := range []struct {
		name      string
		edits     []edit // applied in order (hashes stand in as short names)
		buf, disk string // the buffer and the disk before the command
		want      bool
	}{
		{"one edit of a clean buffer", []edit{{"D", "D", "A1"}}, "A1", "D", true},
		{"edits of two tasks on top of each other", []edit{{"D", "D", "A1"}, {"A1", "D", "A2"}}, "A2", "D", true},
		{"the user typed after the agent's edit", []edit{{"D", "D", "A1"}}, "U", "D", false},
		{"the agent edited on top of the user's unsaved text", []edit{{"U", "D", "A1"}}, "A1", "D", false},
		{"the user typed between two agent edits", []edit{{"D", "D", "A1"}, {"U", "D", "A2"}}, "A2", "D", false},
		{"the disk changed under the buffer", []edit{{"D", "D", "A1"}}, "A1", "D2", false},
		{"an edit back to the disk's text leaves nothing unsaved", []edit{{"D", "D", "A1"}, {"A1", "D", "D"}}, "D", "D", false},
		{"no edit at all", nil, "U", "D", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a agentTexts
			for _, e := range tc.edits {
				a.applied(f, e.prev, e.disk, e.next)
			}
			if got := a.onlyAgent(f, tc.buf, tc.disk); got != tc.want {
				t.Errorf("onlyAgent = %v; want %v", got, tc.want)
			}
			a.forget(f)
			if a.onlyAgent(f, tc.buf, tc.disk) {
				t.Error("onlyAgent after forget")
			}
		})
	}
}

func TestBufferLogSection(t *testing.T) {
	var l bufferLog
	if l.section() != "" {
		t.Fatal("an empty log has a section")
	}
	if !l.add("`go vet ./...`", []string{"main.go"}, false, "unsaved: main.go") {
		t.Error("the first note is not new")
	}
	if l.add("`go test ./...`", []string{"main.go"}, false, "unsaved: main.go") {
		t.Error("the same note twice is new (shown to the user twice)")
	}
	l.add("`sed -i s/a/b/ util.go`", []string{"util.go"}, true, "conflict: util.go")
	want := "\n## Unsaved buffers\n\n" +
		"- **conflict** util.go: `sed -i s/a/b/ util.go` changed the file on disk while the editor held your unsaved changes to it; reads kept your text. Keep one in the editor: save yours, or reload the file from disk.\n" +
		"- main.go has unsaved changes of yours: `go vet ./...` and 1 more ran on the saved copy, without them.\n"
	if got := l.section(); got != want {
		t.Errorf("section =\n%s\nwant\n%s", got, want)
	}
}
