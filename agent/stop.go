package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"
)

// normalizeAnswer folds case, whitespace and markdown emphasis of a whole
// answer, so "**42** files." and "42 files" compare equal. It works on
// the whole text, never on a truncated display copy.
func normalizeAnswer(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsSpace(r):
			space = true
		case strings.ContainsRune("*_`#>.!,;:", r):
			// markdown and trailing punctuation do not change an answer
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		}
	}
	return b.String()
}

// callKey identifies a tool call by its name and canonical arguments.
func callKey(name, args string) string {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err == nil {
		if b, err := json.Marshal(v); err == nil { // map keys come out sorted
			args = string(b)
		}
	}
	return name + " " + args
}

// loopDetector sees every (call, result) pair of a task. A pair seen before
// means the model repeats itself without learning anything new.
type loopDetector struct {
	seen   map[string]int
	warned bool
}

// observe records a pair and reports whether it was seen before.
func (d *loopDetector) observe(name, args, result string) bool {
	if d.seen == nil {
		d.seen = map[string]int{}
	}
	h := sha256.Sum256([]byte(callKey(name, args) + "\x00" + result))
	k := hex.EncodeToString(h[:])
	d.seen[k]++
	return d.seen[k] > 1
}
