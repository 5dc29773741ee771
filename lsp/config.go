package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"

	"go.lsp.dev/protocol"
)

// Environment variables read by the configuration.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvModel   = "AGENTLS_MODEL"
)

// ConfigSection is the settings section agentls reads from
// workspace/didChangeConfiguration (and accepts around initializationOptions).
const ConfigSection = "agentls"

// Defaults of the configuration.
const (
	DefaultModel    = "gpt-4o-mini"
	DefaultBaseURL  = "https://api.openai.com/v1"
	DefaultMaxTurns = 30
)

// Config is the server configuration. Values are layered: defaults, then the
// environment (OPENAI_BASE_URL, AGENTLS_MODEL), then initializationOptions,
// then each workspace/didChangeConfiguration. A setting that is absent keeps
// its value; an invalid one is reported and keeps its value.
//
// Config never holds the API key: only the name of the environment variable
// that holds it (APIKeyEnv), so logging a Config can never leak the key.
type Config struct {
	Model         string   `json:"model"`
	BaseURL       string   `json:"baseURL"`
	APIKeyEnv     string   `json:"apiKeyEnv"`
	LogLevel      string   `json:"logLevel"`      // debug | info | warn | error; empty: as started (--log-level)
	Approval      string   `json:"approval"`      // ask | auto | deny
	AllowCommands []string `json:"allowCommands"` // command prefixes that never ask
	CheckCommand  string   `json:"checkCommand"`  // e.g. "go build ./..."; empty: none
	Validate      string   `json:"validate"`      // off | on | edits
	MaxTurns      int      `json:"maxTurns"`      // model turns per task
	ShowReport    bool     `json:"showReport"`    // open the task report with window/showDocument

	// Per-model settings (docs/models.md), mapped onto llm.Config by
	// ModelConfig. A change takes effect with the next task.
	MaxCompletionTokens int            `json:"maxCompletionTokens"` // 0: left to the service
	Temperature         *float64       `json:"temperature"`         // nil: not sent; 0 is sent
	ExtraBody           map[string]any `json:"extraBody"`           // merged into the request body
	Azure               *AzureConfig   `json:"azure"`               // nil: not Azure OpenAI
	Recordings          bool           `json:"recordings"`          // the flight recorder (.agentls/recordings)
}

// AzureConfig selects Azure OpenAI (setting "azure").
type AzureConfig struct {
	APIVersion string `json:"apiVersion"` // e.g. "2024-10-21"; empty: the client's default
	Deployment string `json:"deployment"` // empty: the model name
}

// DefaultConfig is the configuration before any environment or setting.
func DefaultConfig() Config {
	return Config{
		Model:     DefaultModel,
		BaseURL:   DefaultBaseURL,
		APIKeyEnv: EnvAPIKey,
		Approval:  "ask",
		Validate:  "edits",
		MaxTurns:  DefaultMaxTurns,

		Recordings: true,
	}
}

// ConfigFromEnv is DefaultConfig with the environment applied. getenv is
// os.Getenv in production. Invalid environment values are reported and
// ignored.
func ConfigFromEnv(getenv func(string) string) (Config, []Problem) {
	c := DefaultConfig()
	var problems []Problem
	if v := strings.TrimSpace(getenv(EnvModel)); v != "" {
		c.Model = v
	}
	if v := strings.TrimSpace(getenv(EnvBaseURL)); v != "" {
		if err := checkBaseURL(v); err != nil {
			problems = append(problems, Problem{Field: EnvBaseURL, Message: err.Error(), Kept: redactURL(c.BaseURL)})
		} else {
			c.BaseURL = v
		}
	}
	return c, problems
}

// APIKey returns the API key from the environment variable the
// configuration names. Never log or send the result.
func (c Config) APIKey(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	return getenv(c.APIKeyEnv)
}

// LogValue implements slog.LogValuer. Config holds no key, but a base URL
// may carry one in its user information or query (https://u:KEY@host/,
// ?api-key=KEY): those are redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("model", c.Model), slog.String("baseURL", redactURL(c.BaseURL)),
		slog.String("apiKeyEnv", c.APIKeyEnv), slog.String("logLevel", c.LogLevel),
		slog.String("approval", c.Approval), slog.Any("allowCommands", c.AllowCommands),
		slog.String("checkCommand", c.CheckCommand), slog.String("validate", c.Validate),
		slog.Int("maxTurns", c.MaxTurns), slog.Bool("showReport", c.ShowReport),
		slog.Int("maxCompletionTokens", c.MaxCompletionTokens), slog.Any("temperature", c.Temperature),
		slog.Int("extraBodyFields", len(c.ExtraBody)), slog.Bool("azure", c.Azure != nil),
		slog.Bool("recordings", c.Recordings),
	)
}

// ParseLevel parses a log level name: debug, info, warn or error.
func ParseLevel(name string) (slog.Level, error) {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", name)
}

// applyLevel sets level from the configuration, when it names one.
func (c Config) applyLevel(level *slog.LevelVar) {
	if l, err := ParseLevel(c.LogLevel); err == nil {
		level.Set(l)
	}
}

// Problem is one setting that could not be applied.
type Problem struct {
	Field   string // the setting's name, e.g. "maxTurns"
	Message string // what is wrong, without echoing secrets
	Kept    any    // the value kept instead
}

func (p Problem) String() string {
	if p.Kept == nil {
		return fmt.Sprintf("%s: %s", p.Field, p.Message)
	}
	return fmt.Sprintf("%s: %s (keeping %v)", p.Field, p.Message, fmtKept(p.Kept))
}

func fmtKept(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case []string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprint(v)
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkBaseURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not echoed: a key pasted into the wrong setting would be shown.
		return fmt.Errorf("must be an absolute http(s) URL (the value given is not shown, in case it holds a key)")
	}
	return nil
}

// redactURL hides what a URL may carry as a secret: its user information
// and its query values. Text that does not parse as a URL is hidden whole.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return "[redacted]"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("must be one of %s, got %q", strings.Join(allowed, ", "), v)
}

// setting decodes and checks one field into c.
type setting func(c *Config, raw json.RawMessage) error

func stringSetting(set func(*Config, string), check func(string) error) setting {
	return func(c *Config, raw json.RawMessage) error {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be a string")
		}
		v = strings.TrimSpace(v)
		if err := check(v); err != nil {
			return err
		}
		set(c, v)
		return nil
	}
}

var settings = map[string]setting{
	"model": stringSetting(func(c *Config, v string) { c.Model = v }, func(v string) error {
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		return nil
	}),
	"baseURL": stringSetting(func(c *Config, v string) { c.BaseURL = v }, checkBaseURL),
	"apiKeyEnv": stringSetting(func(c *Config, v string) { c.APIKeyEnv = v }, func(v string) error {
		if !envNameRE.MatchString(v) {
			return fmt.Errorf("must be the name of an environment variable, got %q", v)
		}
		return nil
	}),
	"logLevel": stringSetting(func(c *Config, v string) { c.LogLevel = v }, func(v string) error {
		return oneOf(v, "debug", "info", "warn", "error")
	}),
	"approval": stringSetting(func(c *Config, v string) { c.Approval = v }, func(v string) error {
		return oneOf(v, "ask", "auto", "deny")
	}),
	"validate": stringSetting(func(c *Config, v string) { c.Validate = v }, func(v string) error {
		return oneOf(v, "off", "on", "edits")
	}),
	"checkCommand": stringSetting(func(c *Config, v string) { c.CheckCommand = v }, func(string) error { return nil }),
	"allowCommands": func(c *Config, raw json.RawMessage) error {
		var v []string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be a list of strings")
		}
		out := make([]string, 0, len(v))
		for i, s := range v {
			if s = strings.TrimSpace(s); s == "" {
				return fmt.Errorf("entry %d is empty", i)
			}
			out = append(out, s)
		}
		c.AllowCommands = out
		return nil
	},
	"maxTurns": func(c *Config, raw json.RawMessage) error {
		var v int
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be an integer")
		}
		if v < 1 || v > 1000 {
			return fmt.Errorf("must be between 1 and 1000, got %d", v)
		}
		c.MaxTurns = v
		return nil
	},
	"maxCompletionTokens": func(c *Config, raw json.RawMessage) error {
		var v int
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be an integer")
		}
		if v < 0 || v > 10_000_000 {
			return fmt.Errorf("must be between 0 and 10000000, got %d", v)
		}
		c.MaxCompletionTokens = v
		return nil
	},
	"temperature": func(c *Config, raw json.RawMessage) error {
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be a number")
		}
		if v < 0 || v > 2 {
			return fmt.Errorf("must be between 0 and 2, got %v", v)
		}
		c.Temperature = &v
		return nil
	},
	"extraBody": func(c *Config, raw json.RawMessage) error {
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil || v == nil {
			return fmt.Errorf("must be a JSON object")
		}
		for _, k := range []string{"messages", "tools", "stream"} {
			if _, ok := v[k]; ok {
				return fmt.Errorf("field %q would replace what agentls builds", k)
			}
		}
		c.ExtraBody = v
		return nil
	},
	"azure": func(c *Config, raw json.RawMessage) error {
		var v AzureConfig
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf(`must be {"apiVersion": string, "deployment": string}`)
		}
		v.APIVersion, v.Deployment = strings.TrimSpace(v.APIVersion), strings.TrimSpace(v.Deployment)
		c.Azure = &v
		return nil
	},
	"recordings": func(c *Config, raw json.RawMessage) error {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be true or false")
		}
		c.Recordings = v
		return nil
	},
	"showReport": func(c *Config, raw json.RawMessage) error {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be true or false")
		}
		c.ShowReport = v
		return nil
	},
}

// secretSettings are names a user might put a key under; their values are
// refused and never echoed.
var secretSettings = map[string]bool{"apiKey": true, "api_key": true, "openaiApiKey": true, "key": true, "token": true}

// Apply returns c with the settings in raw applied, and the settings that
// could not be applied. raw is the agentls section itself or an object with
// an "agentls" member; null or absent leaves c as it is.
func (c Config) Apply(raw []byte) (Config, []Problem) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return c, []Problem{{Field: ConfigSection, Message: "settings must be a JSON object"}}
	}
	if sec, ok := obj[ConfigSection]; ok {
		if string(bytes.TrimSpace(sec)) == "null" {
			return c, nil
		}
		obj = nil
		if err := json.Unmarshal(sec, &obj); err != nil {
			return c, []Problem{{Field: ConfigSection, Message: "settings must be a JSON object"}}
		}
	}
	var problems []Problem
	for _, name := range sortedKeysOf(obj) {
		value := obj[name]
		if secretSettings[name] {
			problems = append(problems, Problem{Field: name,
				Message: fmt.Sprintf("API keys are not read from settings; put the key in the environment variable named by apiKeyEnv (now %s)", c.APIKeyEnv)})
			continue
		}
		set, ok := settings[name]
		if !ok {
			problems = append(problems, Problem{Field: name, Message: "unknown setting"})
			continue
		}
		if string(bytes.TrimSpace(value)) == "null" {
			continue
		}
		next := c
		if err := set(&next, value); err != nil {
			problems = append(problems, Problem{Field: name, Message: err.Error(), Kept: c.field(name)})
			continue
		}
		c = next
	}
	return c, problems
}

// field returns the current value of a setting, for messages.
func (c Config) field(name string) any {
	switch name {
	case "model":
		return c.Model
	case "baseURL":
		return redactURL(c.BaseURL)
	case "apiKeyEnv":
		return c.APIKeyEnv
	case "logLevel":
		return c.LogLevel
	case "approval":
		return c.Approval
	case "allowCommands":
		return c.AllowCommands
	case "checkCommand":
		return c.CheckCommand
	case "validate":
		return c.Validate
	case "maxTurns":
		return c.MaxTurns
	case "showReport":
		return c.ShowReport
	case "maxCompletionTokens":
		return c.MaxCompletionTokens
	case "temperature":
		if c.Temperature == nil {
			return "unset"
		}
		return *c.Temperature
	case "extraBody":
		return c.ExtraBody
	case "azure":
		if c.Azure == nil {
			return "unset"
		}
		return *c.Azure
	case "recordings":
		return c.Recordings
	}
	return nil
}

func sortedKeysOf(m map[string]json.RawMessage) []string {
	set := make(map[string]bool, len(m))
	for k := range m {
		set[k] = true
	}
	return sortedKeys(set)
}

func envLookup(name string) string { return os.Getenv(name) }

// reportConfigProblems tells the user, with one window/showMessage warning,
// which settings were not applied.
func (s *Server) reportConfigProblems(ctx context.Context, problems []Problem) {
	if len(problems) == 0 {
		return
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.String()
		s.log.Warn("invalid setting", "field", p.Field, "problem", p.Message)
	}
	s.ShowMessage(ctx, protocol.MessageTypeWarning, "agentls: invalid configuration: "+strings.Join(parts, "; "))
}

func (s *Server) didChangeConfiguration(ctx context.Context, p *protocol.DidChangeConfigurationParams) error {
	s.mu.Lock()
	cfg, problems := s.config.Apply(p.Settings)
	s.config = cfg
	s.mu.Unlock()
	cfg.applyLevel(s.level)
	s.reportConfigProblems(ctx, problems)
	s.log.Info("configuration changed", "config", cfg)
	if s.onConfig != nil {
		s.onConfig(cfg)
	}
	return nil
}
