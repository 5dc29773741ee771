package tools

import "testing"

func TestTailKeepsTheLastBytes(t *testing.T) {
	tl := &Tail{Max: 5}
	for _, s := range []string{"abc", "defg", "h"} {
		if n, err := tl.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := tl.String(); got != "defgh" {
		t.Errorf("String() = %q; want the last 5 bytes %q", got, "defgh")
	}
}
