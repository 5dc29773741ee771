package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentls/agentls/agent/llm"
	"github.com/agentls/agentls/agent/redact"
	"github.com/agentls/agentls/internal/lazyregexp"
	"github.com/agentls/agentls/tools/hooks"
	"github.com/agentls/agentls/tools/mcp"
	"github.com/agentls/agentls/tools/shellpolicy"
	"github.com/agentls/agentls/workspace"
	"github.com/bmatcuk/doublestar/v4"
)

// Environment variables read by the settings.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvModel   = "AGENTLS_MODEL"
)

// Section is the settings section agentls reads from editors
// (workspace/didChangeConfiguration, and around initializationOptions).
const Section = "agentls"

// Defaults of the settings.
const (
	DefaultModel    = "gpt-4o-mini"
	DefaultBaseURL  = "https://api.openai.com/v1"
	DefaultMaxTurns = 30
)

// Settings are the user's settings of one host. Every face builds them the
// same way, with package agent/settings: Defaults, then the user's own
// layers (agentls login, the environment, the user settings file), then
// the face's own input (editor settings with Apply, command-line flags). A setting that is
// absent keeps its value; an invalid one is reported and keeps its value.
//
// Settings never hold the API key: only the name of the environment variable
// that holds it (APIKeyEnv), so logging Settings can never leak the key.
type Settings struct {
	Model         string   `json:"model"`
	BaseURL       string   `json:"baseURL"`
	APIKeyEnv     string   `json:"apiKeyEnv"`
	LogLevel      string   `json:"logLevel"`      // debug | info | warn | error; empty: as started (--log-level)
	Approval      string   `json:"approval"`      // ask | auto | deny
	AllowCommands []string `json:"allowCommands"` // command prefixes that never ask (safe commands only)
	// SafeCommands extend the built-in allowlist of safe commands
	// (tools/shellpolicy): leading words ("mytool lint") whose further
	// words the user vouches run no code named on the command line.
	SafeCommands []string `json:"safeCommands"`
	// AllowSecretReads are globs of files that commonly hold secrets
	// (tools.SecretFile) the agent may read without asking. A user-level
	// setting: it widens what the agent may do.
	AllowSecretReads []string `json:"allowSecretReads"`
	CheckCommand     string   `json:"checkCommand"`  // e.g. "go build ./..."; empty: none
	Validate         string   `json:"validate"`      // off | on | edits
	MaxTurns         int      `json:"maxTurns"`      // model turns per task
	MaxTokens        int      `json:"maxTokens"`     // input+output tokens per task; 0: no limit
	MaxTime          Duration `json:"maxTime"`       // wall time per task; 0: no limit
	ContextWindow    int      `json:"contextWindow"` // tokens; 0: known from the model name
	ShowReport       bool     `json:"showReport"`    // open the task report when the task ends
	Sandbox          string   `json:"sandbox"`       // workspace-write | off
	// CommandNetwork is the network of commands and of the workspace's
	// sandboxed MCP servers: none by default, every host (true), or a list
	// of domains through agentls's proxy (Network); enforced by the
	// sandbox where the kernel can.
	CommandNetwork Network `json:"commandNetwork"`
	// Review is which edits the user reviews before they apply: "off"
	// (none), "always" (every edit), "outside-open" (edits to files not
	// open in the editor). It narrows what the agent may do: a later
	// change may turn it on, never off (consent.go).
	Review string `json:"review"`

	// Per-model settings (docs/models.md), mapped onto llm.Config by
	// ModelConfig. A change takes effect with the next task.
	MaxCompletionTokens int            `json:"maxCompletionTokens"` // 0: left to the service
	Temperature         *float64       `json:"temperature"`         // nil: not sent; 0 is sent
	ExtraBody           map[string]any `json:"extraBody"`           // merged into the request body
	Azure               *AzureConfig   `json:"azure"`               // nil: not Azure OpenAI
	Recordings          bool           `json:"recordings"`          // the flight recorder (.agentls/recordings)
	// Prices per model name, in US dollars per million tokens, for the cost
	// figure of results and reports. A model without a price gets none.
	Prices map[string]Price `json:"prices"`
	// Hooks are the user's hooks, in Claude Code's format (tools/hooks). A
	// user-level setting: a later change that adds one needs consent.
	Hooks hooks.Config `json:"hooks"`
	// LanguageServers replace, per language ("go", "python",
	// "typescript", "rust", "c"), the language server agentls starts for
	// its language tools when the editor does not forward to its own
	// (default: gopls, basedpyright or pyright, typescript-language-server,
	// rust-analyzer, clangd, when on PATH). User-level: a change after
	// start needs consent (it names a program to run).
	LanguageServers map[string]LanguageServer `json:"languageServers"`

	// MCPServers are the user's MCP servers, in Claude Code's .mcp.json
	// shape (setting "mcpServers"; see package tools/mcp), sorted by name.
	MCPServers []mcp.ServerConfig `json:"-"`
	// Models a face offers to choose from (the ACP model picker), with
	// what each accepts; empty: the service's /models list.
	Models []ModelInfo `json:"models"`
	// Completion is inline completion as the user types (LSP
	// textDocument/inlineCompletion; docs/completion.md). Off unless
	// enabled.
	Completion CompletionSettings `json:"completion"`
}

// CompletionSettings configure inline completion (setting "completion").
// A partial object changes only the fields it names.
type CompletionSettings struct {
	// Enabled offers inline completion to the editor. Default false.
	Enabled bool `json:"enabled"`
	// Model is a fill-in-the-middle model served at {baseURL}/completions
	// (prompt and suffix); "" asks the chat model with a fill-in
	// instruction instead.
	Model string `json:"model"`
	// TimeoutMs bounds one model call; the editor then gets nothing.
	TimeoutMs int `json:"timeoutMs"`
	// MaxTokens bounds one completion's answer.
	MaxTokens int `json:"maxTokens"`
	// DebounceMs is how long the user must pause before an automatic
	// completion asks the model (a completion the user invoked does not
	// wait).
	DebounceMs int `json:"debounceMs"`
}

// The defaults of the completion setting.
const (
	DefaultCompletionTimeoutMs  = 5000
	DefaultCompletionMaxTokens  = 128
	DefaultCompletionDebounceMs = 75
)

// ModelInfo declares one model of the "models" setting.
type ModelInfo struct {
	Name string `json:"name"`
	// ReasoningEfforts are the values the model takes as reasoning_effort
	// ("low", "medium", "high"); empty: it takes none.
	ReasoningEfforts []string `json:"reasoningEfforts,omitempty"`
	// ContextWindow is the model's context window in tokens (the size a
	// face reports with its usage); 0: the contextWindow setting's.
	ContextWindow int `json:"contextWindow,omitempty"`
}

// ModelInfo is the declared model named name, if the models setting has it.
func (c Settings) ModelInfo(name string) (ModelInfo, bool) {
	for _, m := range c.Models {
		if m.Name == name {
			return m, true
		}
	}
	return ModelInfo{}, false
}

// Price is what a model's tokens cost, in US dollars per million tokens.
// Cached input tokens cost Cached when set, else Input.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached,omitempty"`
}

// Cost is what usage cost with model's price, and whether a price is known.
func (c Settings) Cost(model string, u llm.Usage) (float64, bool) {
	p, ok := c.Prices[model]
	if !ok {
		return 0, false
	}
	cached := p.Cached
	if cached == 0 {
		cached = p.Input
	}
	in := float64(u.InputTokens-u.CachedTokens)*p.Input + float64(u.CachedTokens)*cached
	return (in + float64(u.OutputTokens)*p.Output) / 1e6, true
}

// Duration is a time.Duration written as "90s" or "15m" in settings.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// AzureConfig selects Azure OpenAI (setting "azure").
type AzureConfig struct {
	APIVersion string `json:"apiVersion"` // e.g. "2024-10-21"; empty: the client's default
	Deployment string `json:"deployment"` // empty: the model name
}

// Defaults are the settings before any environment or editor setting.
func Defaults() Settings {
	return Settings{
		Model:      DefaultModel,
		BaseURL:    DefaultBaseURL,
		APIKeyEnv:  EnvAPIKey,
		Approval:   "ask",
		Validate:   "edits",
		MaxTurns:   DefaultMaxTurns,
		Sandbox:    "workspace-write",
		Review:     ReviewOff,
		Recordings: true,
		Completion: CompletionSettings{
			TimeoutMs:  DefaultCompletionTimeoutMs,
			MaxTokens:  DefaultCompletionMaxTokens,
			DebounceMs: DefaultCompletionDebounceMs,
		},
	}
}

// APIKey returns the API key from the environment variable the settings
// name. Never log or send the result.
func (c Settings) APIKey(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	return getenv(c.APIKeyEnv)
}

// LogValue implements slog.LogValuer. Settings hold no key, but a base URL
// may carry one in its user information or query (https://u:KEY@host/,
// ?api-key=KEY): those are redacted.
func (c Settings) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(table))
	for _, f := range table {
		attrs = append(attrs, slog.Any(f.name, f.show(c)))
	}
	return slog.GroupValue(attrs...)
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

// secretSettings are names a user might put a key under; their values are
// refused and never echoed.
var secretSettings = map[string]bool{"apiKey": true, "api_key": true, "openaiApiKey": true, "key": true, "token": true}

// Apply returns c with the settings in raw applied, and the settings that
// could not be applied. raw is the agentls section itself or an object with
// an "agentls" member; null or absent leaves c as it is.
func (c Settings) Apply(raw []byte) (Settings, []Problem) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return c, []Problem{{Field: Section, Message: "settings must be a JSON object"}}
	}
	if sec, ok := obj[Section]; ok {
		if string(bytes.TrimSpace(sec)) == "null" {
			return c, nil
		}
		obj = nil
		if err := json.Unmarshal(sec, &obj); err != nil {
			return c, []Problem{{Field: Section, Message: "settings must be a JSON object"}}
		}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	var problems []Problem
	for _, name := range names {
		value := obj[name]
		if secretSettings[name] {
			problems = append(problems, Problem{Field: name,
				Message: fmt.Sprintf("API keys are not read from settings; put the key in the environment variable named by apiKeyEnv (now %s)", c.APIKeyEnv)})
			continue
		}
		f, ok := byName[name]
		if !ok {
			problems = append(problems, Problem{Field: name, Message: "unknown setting"})
			continue
		}
		if string(bytes.TrimSpace(value)) == "null" {
			continue
		}
		next := c
		if err := f.set(&next, value); err != nil {
			problems = append(problems, Problem{Field: name, Message: err.Error(), Kept: f.show(c)})
			continue
		}
		c = next
	}
	return c, problems
}

// Check checks settings built without Apply (command-line flags): the
// same rules, one problem per invalid setting.
func (c Settings) Check() []Problem {
	var problems []Problem
	for _, f := range table {
		raw, err := json.Marshal(f.value(c))
		if err != nil {
			continue
		}
		if string(raw) == "null" {
			continue
		}
		var scratch Settings
		if err := f.set(&scratch, raw); err != nil {
			problems = append(problems, Problem{Field: f.name, Message: err.Error()})
		}
	}
	return problems
}

// field is one setting: how it is decoded and checked, and shown.
type field struct {
	name  string
	set   func(c *Settings, raw json.RawMessage) error
	value func(c Settings) any // the value as JSON would carry it
	show  func(c Settings) any // the value for messages and logs (secrets hidden)
}

func decode[T any](raw json.RawMessage, what string) (T, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("must be %s", what)
	}
	return v, nil
}

// setting makes the field of one value of type T at ptr: decoded from JSON
// (what says what JSON value it takes), normalised and checked.
func setting[T any](name, what string, ptr func(*Settings) *T, check func(*T) error) field {
	get := func(c Settings) any { return *ptr(&c) }
	return field{
		name: name,
		set: func(c *Settings, raw json.RawMessage) error {
			v, err := decode[T](raw, what)
			if err != nil {
				return err
			}
			if check != nil {
				if err := check(&v); err != nil {
					return err
				}
			}
			*ptr(c) = v
			return nil
		},
		value: get,
		show:  get,
	}
}

func trimmed(next func(string) error) func(*string) error {
	return func(v *string) error {
		*v = strings.TrimSpace(*v)
		if next == nil {
			return nil
		}
		return next(*v)
	}
}

// nonEmptyList trims the entries of a list of strings; none may be empty.
func nonEmptyList(v *[]string) error {
	out := make([]string, 0, len(*v))
	for i, s := range *v {
		if s = strings.TrimSpace(s); s == "" {
			return fmt.Errorf("entry %d is empty", i)
		}
		out = append(out, s)
	}
	*v = out
	return nil
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
}

func between(lo, hi int) func(*int) error {
	return func(v *int) error {
		if *v < lo || *v > hi {
			return fmt.Errorf("must be between %d and %d, got %d", lo, hi, *v)
		}
		return nil
	}
}

var envNameRE = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// table is every setting, validated by one rule each.
var table = []field{
	setting("model", "a string", func(c *Settings) *string { return &c.Model }, trimmed(func(v string) error {
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		return nil
	})),
	withShow(setting("baseURL", "a string", func(c *Settings) *string { return &c.BaseURL }, trimmed(checkBaseURL)),
		func(c Settings) any { return RedactURL(c.BaseURL) }),
	setting("apiKeyEnv", "a string", func(c *Settings) *string { return &c.APIKeyEnv }, trimmed(func(v string) error {
		if !envNameRE.MatchString(v) {
			return fmt.Errorf("must be the name of an environment variable, got %q", v)
		}
		return nil
	})),
	setting("logLevel", "a string", func(c *Settings) *string { return &c.LogLevel }, trimmed(func(v string) error {
		if v == "" {
			return nil
		}
		return oneOf("debug", "info", "warn", "error")(v)
	})),
	setting("approval", "a string", func(c *Settings) *string { return &c.Approval }, trimmed(oneOf("ask", "auto", "deny"))),
	setting("allowCommands", "a list of strings", func(c *Settings) *[]string { return &c.AllowCommands }, nonEmptyList),
	setting("safeCommands", "a list of strings", func(c *Settings) *[]string { return &c.SafeCommands }, func(v *[]string) error {
		if err := nonEmptyList(v); err != nil {
			return err
		}
		if _, errs := shellpolicy.Default().With(*v); len(errs) > 0 {
			return errs[0]
		}
		return nil
	}),
	setting("allowSecretReads", "a list of globs", func(c *Settings) *[]string { return &c.AllowSecretReads }, func(v *[]string) error {
		out := make([]string, 0, len(*v))
		for i, s := range *v {
			if s = strings.TrimSpace(s); s == "" || !doublestar.ValidatePattern(s) {
				return fmt.Errorf("entry %d is not a glob", i)
			}
			out = append(out, s)
		}
		*v = out
		return nil
	}),
	setting("checkCommand", "a string", func(c *Settings) *string { return &c.CheckCommand }, trimmed(nil)),
	setting("validate", "a string", func(c *Settings) *string { return &c.Validate }, trimmed(oneOf("off", "on", "edits"))),
	setting("maxTurns", "an integer", func(c *Settings) *int { return &c.MaxTurns }, between(1, 1000)),
	setting("maxTokens", "an integer", func(c *Settings) *int { return &c.MaxTokens }, between(0, 1_000_000_000)),
	setting("maxTime", `a duration such as "90s" or "15m"`, func(c *Settings) *Duration { return &c.MaxTime }, func(d *Duration) error {
		if *d < 0 {
			return fmt.Errorf("must not be negative")
		}
		return nil
	}),
	setting("contextWindow", "an integer", func(c *Settings) *int { return &c.ContextWindow }, between(0, 100_000_000)),
	setting("showReport", "true or false", func(c *Settings) *bool { return &c.ShowReport }, nil),
	setting("sandbox", "a string", func(c *Settings) *string { return &c.Sandbox }, trimmed(oneOf("workspace-write", "off"))),
	{
		name: "commandNetwork",
		set: func(c *Settings, raw json.RawMessage) error {
			var v Network
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			c.CommandNetwork = v
			return nil
		},
		value: func(c Settings) any { return c.CommandNetwork },
		show:  func(c Settings) any { return c.CommandNetwork.String() },
	},
	setting("review", "a string", func(c *Settings) *string { return &c.Review }, trimmed(oneOf(ReviewOff, ReviewAlways, ReviewOutsideOpen))),
	setting("maxCompletionTokens", "an integer", func(c *Settings) *int { return &c.MaxCompletionTokens }, between(0, 10_000_000)),
	withShow(setting("temperature", "a number", func(c *Settings) **float64 { return &c.Temperature }, func(v **float64) error {
		if *v == nil || **v < 0 || **v > 2 {
			return fmt.Errorf("must be a number between 0 and 2")
		}
		return nil
	}), func(c Settings) any {
		if c.Temperature == nil {
			return "unset"
		}
		return *c.Temperature
	}),
	withShow(setting("extraBody", "a JSON object", func(c *Settings) *map[string]any { return &c.ExtraBody }, func(v *map[string]any) error {
		if *v == nil {
			return fmt.Errorf("must be a JSON object")
		}
		for _, k := range []string{"messages", "tools", "stream"} {
			if _, ok := (*v)[k]; ok {
				return fmt.Errorf("field %q would replace what agentls builds", k)
			}
		}
		return nil
	}), func(c Settings) any { return fmt.Sprintf("%d field(s)", len(c.ExtraBody)) }),
	{
		name: "azure",
		set: func(c *Settings, raw json.RawMessage) error {
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
		value: func(c Settings) any { return c.Azure },
		show: func(c Settings) any {
			if c.Azure == nil {
				return "unset"
			}
			return *c.Azure
		},
	},
	withShow(setting("languageServers", `an object of languages to {"command": string, "args"?: [string], "initializationOptions"?: object}`,
		func(c *Settings) *map[string]LanguageServer { return &c.LanguageServers }, checkLanguageServers),
		func(c Settings) any { return fmt.Sprintf("%d language(s)", len(c.LanguageServers)) }),
	setting("recordings", "true or false", func(c *Settings) *bool { return &c.Recordings }, nil),
	mcpServersSetting,
	withShow(setting("prices", `an object of model names to {"input": number, "output": number, "cached"?: number} (US dollars per million tokens)`,
		func(c *Settings) *map[string]Price { return &c.Prices }, func(v *map[string]Price) error {
			for m, p := range *v {
				if p.Input < 0 || p.Output < 0 || p.Cached < 0 {
					return fmt.Errorf("the prices of %q must not be negative", m)
				}
			}
			return nil
		}), func(c Settings) any { return fmt.Sprintf("%d model(s)", len(c.Prices)) }),
	withShow(setting("models", `a list of {"name": string, "reasoningEfforts"?: [string], "contextWindow"?: integer}`,
		func(c *Settings) *[]ModelInfo { return &c.Models }, func(v *[]ModelInfo) error {
			for i, m := range *v {
				if (*v)[i].Name = strings.TrimSpace(m.Name); (*v)[i].Name == "" {
					return fmt.Errorf("entry %d has no name", i)
				}
				if m.ContextWindow < 0 || m.ContextWindow > 100_000_000 {
					return fmt.Errorf("entry %d: contextWindow %d is not between 0 and 100000000", i, m.ContextWindow)
				}
			}
			return nil
		}), func(c Settings) any { return fmt.Sprintf("%d model(s)", len(c.Models)) }),
	{
		name: "completion",
		set: func(c *Settings, raw json.RawMessage) error {
			v := c.Completion
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				return fmt.Errorf(`must be {"enabled"?: boolean, "model"?: string, "timeoutMs"?: number, "maxTokens"?: number, "debounceMs"?: number}`)
			}
			v.Model = strings.TrimSpace(v.Model)
			switch {
			case v.TimeoutMs < 100 || v.TimeoutMs > 120_000:
				return fmt.Errorf("timeoutMs must be between 100 and 120000, got %d", v.TimeoutMs)
			case v.MaxTokens < 1 || v.MaxTokens > 4096:
				return fmt.Errorf("maxTokens must be between 1 and 4096, got %d", v.MaxTokens)
			case v.DebounceMs < 0 || v.DebounceMs > 5000:
				return fmt.Errorf("debounceMs must be between 0 and 5000, got %d", v.DebounceMs)
			}
			c.Completion = v
			return nil
		},
		value: func(c Settings) any { return c.Completion },
		show:  func(c Settings) any { return c.Completion },
	},
	{
		name: "hooks",
		set: func(c *Settings, raw json.RawMessage) error {
			v, err := hooks.Decode(raw)
			if err != nil {
				return err
			}
			c.Hooks = v
			return nil
		},
		value: func(c Settings) any { return c.Hooks },
		show:  func(c Settings) any { return fmt.Sprintf("%d hook(s)", len(c.Hooks.Entries())) },
	},
}

func withShow(f field, show func(Settings) any) field {
	f.show = show
	return f
}

var byName = func() map[string]field {
	m := make(map[string]field, len(table))
	for _, f := range table {
		m[f.name] = f
	}
	return m
}()

// UnmarshalJSON accepts "90s", "15m" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return err
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// MarshalJSON writes the duration as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func checkBaseURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not echoed: a key pasted into the wrong setting would be shown.
		return fmt.Errorf("must be an absolute http(s) URL (the value given is not shown, in case it holds a key)")
	}
	return nil
}

// RedactURL hides what a URL may carry as a secret: its user information
// and its query values (redact.URL). Text that does not parse as a URL is
// hidden whole.
func RedactURL(v string) string { return redact.URL(v) }

// ModelConfig maps the settings onto the model client's, with the API key
// read from the variable named by APIKeyEnv. The result holds the key:
// never log it other than through llm.Config's own redacting methods.
func (c Settings) ModelConfig(getenv func(string) string) llm.Config {
	m := llm.Config{
		BaseURL:             c.BaseURL,
		APIKey:              c.APIKey(getenv),
		APIKeyEnv:           c.APIKeyEnv,
		Model:               c.Model,
		MaxCompletionTokens: c.MaxCompletionTokens,
		Temperature:         c.Temperature,
		ExtraBody:           c.ExtraBody,
	}
	if c.Azure != nil {
		m.Azure = true
		m.AzureAPIVersion = c.Azure.APIVersion
		m.AzureDeployment = c.Azure.Deployment
	}
	return m
}

// modelKey identifies a model configuration: a client is rebuilt when it
// changes. It holds a digest of the key, never the key.
func modelKey(m llm.Config) string {
	key := "none"
	if m.APIKey != "" {
		key = workspace.HashText(m.APIKey)[:16]
	}
	var temp any
	if m.Temperature != nil {
		temp = *m.Temperature
	}
	return fmt.Sprintf("%s|%s|%s|%s|%d|%v|%v|%t|%s|%s", m.BaseURL, m.Model, m.APIKeyEnv, key,
		m.MaxCompletionTokens, temp, m.ExtraBody, m.Azure, m.AzureAPIVersion, m.AzureDeployment)
}

// IsLoopback reports whether baseURL names this machine (local model
// servers need no key).
func IsLoopback(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ErrNoAPIKey is the error of a task started without a key for a model
// service that needs one.
type ErrNoAPIKey struct{ Env string }

func (e *ErrNoAPIKey) Error() string {
	return fmt.Sprintf("no API key: the environment variable %s is empty or unset. Set it in the environment the editor starts agentls from (e.g. export %s=sk-... before starting the editor), or name another variable with the apiKeyEnv setting; a local model server (baseURL on localhost) needs none", e.Env, e.Env)
}

// SettingNames are the names of every setting of the "agentls" section,
// in the order the settings table declares them (the editor contract's
// settings schema).
func SettingNames() []string {
	out := make([]string, len(table))
	for i, f := range table {
		out[i] = f.name
	}
	return out
}
