package agent

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckTaskID(t *testing.T) {
	r := NewTaskRegistry()
	for _, id := range []string{r.newID(), r.newID(), "3fa2b1c0-1", "00000000-4294967295"} {
		if err := CheckTaskID(id); err != nil {
			t.Errorf("CheckTaskID(%q) = %v; want nil", id, err)
		}
	}
	for _, id := range []string{
		"", "../../x", "../../../etc/passwd", "/etc/passwd", "/tmp/x", "3fa2b1c0-1/../../x", "3fa2b1c0-1\x00", "3fa2b1c0\x00-1",
		"3fa2b1c0-1.md", "3FA2B1C0-1", "3fa2b1c0-0", "3fa2b1c0-", "3fa2b1c-1", "3fa2b1c0-1 ", " 3fa2b1c0-1", "3fa2b1c0-1\n",
		"..\\..\\x", "C:\\x", "3fa2b1c0-" + strings.Repeat("9", 100), strings.Repeat("a", 1<<16), "nope", "old-1",
	} {
		err := CheckTaskID(id)
		if !errors.Is(err, ErrInvalidTaskID) {
			t.Errorf("CheckTaskID(%q) = %v; want ErrInvalidTaskID", id, err)
			continue
		}
		if len(err.Error()) > 300 {
			t.Errorf("CheckTaskID of a %d-byte id: error of %d bytes; want it short", len(id), len(err.Error()))
		}
	}
}
