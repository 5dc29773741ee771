package tools

import "testing"

func TestZZDebug(t *testing.T) {
	res, _, text := runIn(t, "", false, "cat /proc/self/mountinfo | tail -8; ls -la /tmp /run; env")
	t.Logf("%+v\n%s", res, text)
}
