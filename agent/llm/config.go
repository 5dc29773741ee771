package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/agentls/agentls/agent/redact"
)

// Defaults used when a Config field is left zero.
const (
	DefaultBaseURL   = "https://api.openai.com/v1"
	DefaultAPIKeyEnv = "OPENAI_API_KEY"
	DefaultTimeout   = 2 * time.Minute

	DefaultMaxResponseBytes = 4 << 20  // text, reasoning and arguments of one response
	DefaultMaxToolArgsBytes = 1 << 20  // the arguments of one tool call
	DefaultMaxStreamBytes   = 64 << 20 // the bytes of one streamed answer, JSON framing included
	DefaultTotalDeadline    = 10 * time.Minute
	DefaultMaxAttempts      = 6
	DefaultRetryBase        = 500 * time.Millisecond
	DefaultRetryCap         = 30 * time.Second
	DefaultAzureVersion     = "2024-10-21"
)

// Config configures a Client. The zero value of every field but Model means
// "the default". APIKey is never logged or printed: Config's String and
// LogValue redact it.
type Config struct {
	// BaseURL of an OpenAI-compatible service, usually ending in /v1
	// (e.g. http://localhost:11434/v1 for Ollama).
	BaseURL string
	// APIKey is sent as a bearer token (or as the api-key header for Azure).
	// Local servers accept an empty key.
	APIKey string
	// APIKeyEnv names the environment variable the key came from; it is used
	// only in error messages ("set OPENAI_API_KEY ...").
	APIKeyEnv string
	// Model is the model name (for Azure, see AzureDeployment).
	Model string
	// MaxCompletionTokens bounds the answer (sent as max_completion_tokens);
	// 0 leaves it to the service.
	MaxCompletionTokens int
	// Temperature is sent when set, including 0.
	Temperature *float64
	// ExtraBody holds service-specific request fields merged into the JSON
	// body, e.g. {"options": {"num_ctx": 32768}} for Ollama or
	// {"reasoning_effort": "low"}. A key here replaces the client's own.
	ExtraBody map[string]any
	// NoStreamUsage omits stream_options.include_usage, for servers that
	// refuse it; usage is then reported as zero.
	NoStreamUsage bool

	// Timeout is the longest silence tolerated within one attempt: before the
	// response headers, and between two streamed chunks. A stalled attempt is
	// retried. Default DefaultTimeout.
	Timeout time.Duration
	// TotalDeadline bounds one Complete call, retries and waits included.
	// Default DefaultTotalDeadline.
	TotalDeadline time.Duration
	// Retry is the retry policy for transient failures.
	Retry RetryPolicy

	// MaxResponseBytes bounds one response's text, reasoning and tool-call
	// arguments together; MaxToolArgsBytes one tool call's arguments;
	// MaxStreamBytes the bytes read of one streamed answer. A response over
	// a limit fails at once with an error naming it, so a service that
	// streams without end cannot grow the server's memory. Defaults
	// DefaultMaxResponseBytes, DefaultMaxToolArgsBytes, DefaultMaxStreamBytes.
	MaxResponseBytes, MaxToolArgsBytes, MaxStreamBytes int64

	// Azure selects Azure OpenAI: BaseURL is the resource endpoint
	// (https://NAME.openai.azure.com) and the key goes in the api-key header.
	Azure bool
	// AzureAPIVersion is the api-version query parameter (default
	// DefaultAzureVersion).
	AzureAPIVersion string
	// AzureDeployment is the deployment name; default Model.
	AzureDeployment string
}

// RetryPolicy is a capped exponential backoff with jitter.
type RetryPolicy struct {
	MaxAttempts int           // attempts in all, first included; default DefaultMaxAttempts
	Base        time.Duration // wait after the first failure, before jitter; default DefaultRetryBase
	Cap         time.Duration // longest computed wait (Retry-After may ask for more); default DefaultRetryCap
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultAPIKeyEnv
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.TotalDeadline <= 0 {
		c.TotalDeadline = DefaultTotalDeadline
	}
	if c.Retry.MaxAttempts <= 0 {
		c.Retry.MaxAttempts = DefaultMaxAttempts
	}
	if c.Retry.Base <= 0 {
		c.Retry.Base = DefaultRetryBase
	}
	if c.Retry.Cap <= 0 {
		c.Retry.Cap = DefaultRetryCap
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxToolArgsBytes <= 0 {
		c.MaxToolArgsBytes = DefaultMaxToolArgsBytes
	}
	if c.MaxStreamBytes <= 0 {
		c.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if c.Retry.Cap < c.Retry.Base {
		c.Retry.Cap = c.Retry.Base
	}
	if c.Azure {
		if c.AzureAPIVersion == "" {
			c.AzureAPIVersion = DefaultAzureVersion
		}
		if c.AzureDeployment == "" {
			c.AzureDeployment = c.Model
		}
	}
	return c
}

func (c Config) validate() error {
	if c.Model == "" && !(c.Azure && c.AzureDeployment != "") {
		return errors.New("no model configured: set AGENTLS_MODEL or agentls.model")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q is not an http(s) URL: set OPENAI_BASE_URL or agentls.baseURL", redactURL(c.BaseURL))
	}
	for k := range c.ExtraBody {
		switch k {
		case "messages", "tools", "stream":
			return fmt.Errorf("extra body field %q would replace what the client builds: remove it", k)
		}
	}
	return nil
}

// String describes c without its API key.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("llm.Config{BaseURL: %s, Model: %s, APIKey: %s, Azure: %t}", redactURL(c.BaseURL), c.Model, key, c.Azure)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer without the API key.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("baseURL", redactURL(c.BaseURL)),
		slog.String("model", c.Model),
		slog.Bool("apiKeySet", c.APIKey != ""),
		slog.Int("maxCompletionTokens", c.MaxCompletionTokens),
	}
	if c.Temperature != nil {
		attrs = append(attrs, slog.Float64("temperature", *c.Temperature))
	}
	if c.Azure {
		attrs = append(attrs, slog.String("azureDeployment", c.AzureDeployment), slog.String("azureAPIVersion", c.AzureAPIVersion))
	}
	return slog.GroupValue(attrs...)
}

// redactURL hides what a URL may carry as a secret: its user information
// and its query values (a key may hide in either).
func redactURL(s string) string { return redact.URL(s) }

// splitBaseURL is the base URL without its query, to which go-openai
// appends each endpoint's path, and the query every request carries
// (https://h/v1?key=X calls https://h/v1/chat/completions?key=X).
func splitBaseURL(raw string) (string, url.Values) {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" && !u.ForceQuery {
		return raw, nil
	}
	q := u.Query()
	u.RawQuery, u.ForceQuery = "", false
	return strings.TrimSuffix(u.String(), "/"), q
}

// secrets are the values of c no error, log or recording may hold: the
// API key and what the base URL carries.
func (c Config) secrets() []string {
	return append([]string{c.APIKey}, redact.URLSecrets(c.BaseURL)...)
}
