package session

import (
	"context"
	"testing"

	"github.com/agentls/agentls/tools"
)

func TestSecretReadsAskEvenUnderAuto(t *testing.T) {
	secret := tools.ApprovalRequest{Tool: "read_file", Summary: "read .env", Path: ".env", Secret: true}
	write := tools.ApprovalRequest{Tool: "write_file", Summary: "write a.go", Path: "a.go"}
	for _, tc := range []struct {
		name     string
		approval string
		allow    []string
		req      tools.ApprovalRequest
		answer   tools.Decision
		want     tools.Decision
		asked    bool
	}{
		{"auto asks for a secret read", "auto", nil, secret, tools.Deny, tools.Deny, true},
		{"auto, the user allows", "auto", nil, secret, tools.AllowForTask, tools.AllowForTask, true},
		{"auto still allows writes unasked", "auto", nil, write, tools.Deny, tools.AllowOnce, false},
		{"deny denies a secret read unasked", "deny", []string{".env"}, secret, tools.AllowOnce, tools.Deny, false},
		{"ask asks", "ask", nil, secret, tools.AllowOnce, tools.AllowOnce, true},
		{"allowSecretReads covers it", "auto", []string{".env*"}, secret, tools.Deny, tools.AllowOnce, false},
		{"allowSecretReads of another file", "auto", []string{"config/*.pem"}, secret, tools.Deny, tools.Deny, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := &askPort{answer: tc.answer}
			s := Defaults()
			s.Approval, s.AllowSecretReads = tc.approval, tc.allow
			a := &approvalPolicy{port: port, stateDir: t.TempDir(), settings: s, task: func() (string, string) { return "t1", "p" }}
			got, err := a.Approve(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || (len(port.asked()) == 1) != tc.asked {
				t.Errorf("Approve(%+v) under %s = %v, asked %d; want %v, asked %v", tc.req, tc.approval, got, len(port.asked()), tc.want, tc.asked)
			}
		})
	}
}
