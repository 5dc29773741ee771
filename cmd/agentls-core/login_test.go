package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentls/agentls/agent/settings"
)

// TestLoginStoresTheKeyFromStdin: `agentls login` (and `agentls acp login`,
// the ACP terminal auth method) store the first line of a non-terminal
// stdin as the key, and say where; nothing of the key is printed.
func TestLoginStoresTheKeyFromStdin(t *testing.T) {
	for _, args := range [][]string{nil, {"login"}} {
		t.Setenv("XDG_CONFIG_HOME", t.TempDir())
		var out, errb bytes.Buffer
		io := stdio{in: strings.NewReader("sk-login-test-42\n"), out: &out, err: &errb}
		var err error
		if args == nil {
			err = runLogin(context.Background(), io, nil)
		} else {
			err = runACP(context.Background(), io, args)
		}
		if err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		dir, _ := settings.UserDir()
		if l, err := settings.ReadLogin(dir); l.APIKey != "sk-login-test-42" || err != nil {
			t.Errorf("%v: stored %q, %v", args, l.APIKey, err)
		}
		if strings.Contains(out.String()+errb.String(), "sk-login-test-42") {
			t.Errorf("%v: the key was printed", args)
		}
		if !strings.Contains(errb.String(), "credentials.json") {
			t.Errorf("%v: %q does not say where the key is", args, errb.String())
		}
	}
}
