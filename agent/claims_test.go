package agent

import "testing"

// TestClaimsChangeMade: "I changed nothing" is not a claim of a change
// (the gate used to ask the model again, costing a call and a confusing
// note); "I updated Foo" is.
func TestClaimsChangeMade(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   bool
	}{
		{"I updated Foo to skip negative quantities.", true},
		{"Fixed the test.", true},
		{"I changed nothing: the code already does this.", false},
		{"No file was modified; Foo already returns early.", false},
		{"Nothing needed to be changed.", false},
		{"I did not edit anything. Foo is correct.", false},
		{"The function is correct as it is.", false},
		{"Nothing was wrong in a.go. I added a test in b.go.", true},
	} {
		if got := claimsChangeMade(tc.answer); got != tc.want {
			t.Errorf("claimsChangeMade(%q) = %v; want %v", tc.answer, got, tc.want)
		}
	}
}
