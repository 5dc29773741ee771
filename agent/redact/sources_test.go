package redact

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestEnvSecretsFindsNamedSecretsAndURLUserInfo(t *testing.T) {
	got := EnvSecrets([]string{
		"GITHUB_TOKEN=ghp_0123456789abcdef",
		"AZURE_OPENAI_API_KEY=azure-key-0123456789",
		"OPENAI_BASE_URL=https://me:hunter2-password@llm.example/v1?api-key=query-key-123",
		"HOME=/root",
		"PATH=/usr/bin",
	})
	for _, want := range []string{"ghp_0123456789abcdef", "azure-key-0123456789", "hunter2-password", "query-key-123"} {
		if !slices.Contains(got, want) {
			t.Errorf("EnvSecrets lacks %q: %q", want, got)
		}
	}
	for _, not := range []string{"/root", "/usr/bin"} {
		if slices.Contains(got, not) {
			t.Errorf("EnvSecrets holds %q, which no name marks as secret", not)
		}
	}
}

func TestJSONHidesEscapedSecrets(t *testing.T) {
	secret := `pa"ss<word>\1234`
	b, _ := json.Marshal(map[string]string{"answer": "the key is " + secret})
	out := New(secret).JSON(b)
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil || m["answer"] != "the key is "+Text {
		t.Fatalf("JSON(%s) = %s (%v)", b, out, err)
	}
}
