package redact

import (
	"slices"
	"strings"
	"testing"
)

func TestConfigSecretsByNameHeaderAndShape(t *testing.T) {
	got := ConfigSecrets(map[string]string{
		"GITHUB_TOKEN":  "gho-value-3Kq9",
		"Authorization": "Bearer cfg-Tk7Lm2Qx",
		"X-Upstream-Id": "Zq81LmXw27PkVr4Nd9",          // generated-looking, whatever its name
		"NODE_ENV":      "production",                  // an ordinary word
		"LOG_FORMAT":    "json with colors and spaces", // prose
		"BASE":          "https://u:pw-9Xq2Lm7Z@example.com/",
	})
	for _, want := range []string{"gho-value-3Kq9", "Bearer cfg-Tk7Lm2Qx", "cfg-Tk7Lm2Qx", "Zq81LmXw27PkVr4Nd9", "pw-9Xq2Lm7Z"} {
		if !slices.Contains(got, want) {
			t.Errorf("ConfigSecrets lacks %q: %q", want, got)
		}
	}
	for _, not := range []string{"production", "json with colors and spaces"} {
		if slices.Contains(got, not) {
			t.Errorf("ConfigSecrets took %q for a secret", not)
		}
	}
}

func TestConfiguredSecretsReachRedactorsMadeBefore(t *testing.T) {
	r := New("api-key-0123456789") // made before the secret is configured
	secret := "acp-mcp-" + "Vx93Kq2Lw8"
	Configure(secret, "short")
	text := "token " + secret + " and short"
	if got := r.String(text); strings.Contains(got, secret) || !strings.Contains(got, "short") {
		t.Errorf("String = %q; want the configured secret hidden and the short value kept", got)
	}
	if got := string(r.JSON([]byte(`{"t":"` + secret + `"}`))); strings.Contains(got, secret) {
		t.Errorf("JSON = %s", got)
	}
	if !slices.Contains(New().Secrets(), secret) {
		t.Error("Secrets() lacks the configured secret: the store's redactor would not hide it")
	}
}
