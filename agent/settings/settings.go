// Package settings is agentls's one settings loader: every face (serve,
// acp, run, eval) builds its settings here, from the same layers in the
// same order, and each value knows the layer it came from.
//
// The layers, lowest first:
//
//  1. the defaults (session.Defaults);
//  2. the pair `agentls login --base-url` stored (the model service the
//     stored key is for);
//  3. the environment (OPENAI_BASE_URL, AGENTLS_MODEL);
//  4. the user settings file (UserDir()/settings.json);
//  5. the command line's flags and --settings (run, eval);
//  6. the client's options (LSP initializationOptions and
//     workspace/didChangeConfiguration), applied by the face over the
//     user-level settings.
//
// Layers 1 to 5 are the user's own: they are the host's trust baseline
// (session.Options.User), and the model endpoint they name may receive the
// API key. What the client's options add on top (another endpoint, a
// wider approval, more safe commands, ...) can come from a repository
// (Zed's project settings, Helix's .helix/languages.toml, Neovim's exrc),
// so the host asks before it applies (session's confirmSettings), and an
// endpoint the user confirmed is remembered (Endpoints).
//
// The API key itself is never a setting: it is read from the environment
// variable apiKeyEnv names, else from what `agentls login` stored
// (Loaded.Getenv).
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentls/agentls/agent/session"
)

// Source is the layer a setting's value came from.
type Source string

// The sources, lowest layer first.
const (
	FromDefault     Source = "default"
	FromLogin       Source = "agentls login"
	FromEnvironment Source = "environment"
	FromUserFile    Source = "user settings file"
	FromCommandLine Source = "command line"
	FromClient      Source = "client"
)

// UserLevel reports whether values from s are the user's own (they may
// name where the key goes and widen what runs unasked).
func (s Source) UserLevel() bool { return s != FromClient }

// UserSettingsFileName is the user's settings file in the user's agentls
// folder. The user writes it, so it may widen what the agent may do.
const UserSettingsFileName = "settings.json"

// Layered are settings with the source of each value: a setting absent
// from Sources has its default.
type Layered struct {
	Settings session.Settings
	sources  map[string]Source
}

// Source is where the setting name got its value.
func (l Layered) Source(name string) Source {
	if s, ok := l.sources[name]; ok {
		return s
	}
	return FromDefault
}

// Sources maps each setting that is not at its default to its source.
func (l Layered) Sources() map[string]Source { return maps.Clone(l.sources) }

// Apply applies raw (an agentls settings object, or an object with an
// "agentls" member, as session.Settings.Apply takes) as the layer from,
// and returns the settings that could not be applied.
func (l Layered) Apply(raw []byte, from Source) (Layered, []session.Problem) {
	next, problems := l.Settings.Apply(raw)
	bad := map[string]bool{}
	for _, p := range problems {
		bad[p.Field] = true
	}
	out := Layered{Settings: next, sources: maps.Clone(l.sources)}
	if out.sources == nil {
		out.sources = map[string]Source{}
	}
	for _, name := range names(raw) {
		if !bad[name] {
			out.sources[name] = from
		}
	}
	return out, problems
}

// Set records that the command line set the setting name (a flag).
func (l Layered) Set(name string, from Source) Layered {
	l.sources = maps.Clone(l.sources)
	if l.sources == nil {
		l.sources = map[string]Source{}
	}
	l.sources[name] = from
	return l
}

// LogValue-friendly summary: "name=source" for each setting not at its
// default, sorted.
func (l Layered) String() string {
	keys := slices.Sorted(maps.Keys(l.sources))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + string(l.sources[k])
	}
	return strings.Join(parts, " ")
}

// names are the setting names raw carries, as Settings.Apply reads them.
func names(raw []byte) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(raw), &obj) != nil {
		return nil
	}
	if sec, ok := obj[session.Section]; ok {
		obj = nil
		if json.Unmarshal(sec, &obj) != nil {
			return nil
		}
	}
	var out []string
	for k, v := range obj {
		if string(bytes.TrimSpace(v)) != "null" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Options configure Load.
type Options struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Dir is the user's agentls folder (settings.json, credentials.json,
	// endpoints.json); "" means UserDir().
	Dir string
}

// Loaded are the user-level settings of one agentls process and what goes
// with them.
type Loaded struct {
	// User are the settings of the user's own layers (defaults, login,
	// environment, user settings file): the trust baseline.
	User Layered
	// Problems are the settings of those layers that could not be applied
	// (each keeps the value below it).
	Problems []session.Problem
	// Getenv reads the environment, with the key `agentls login` stored
	// as the value of the key's variable when that is empty.
	Getenv func(string) string
	// Endpoints are the model endpoints the user confirmed.
	Endpoints *Endpoints
	// Dir is the user's agentls folder ("" when there is none).
	Dir string
}

// Load reads the user's layers: defaults, the login pair, the
// environment and the user settings file.
func Load(opts Options) *Loaded {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	l := &Loaded{User: Layered{Settings: session.Defaults()}, Dir: opts.Dir}
	if l.Dir == "" {
		if d, err := UserDir(); err == nil {
			l.Dir = d
		} else {
			l.Problems = append(l.Problems, session.Problem{Field: "user settings", Message: err.Error()})
		}
	}
	if l.Dir != "" {
		if login, err := ReadLogin(l.Dir); err != nil {
			l.Problems = append(l.Problems, session.Problem{Field: CredentialsFileName, Message: err.Error()})
		} else if login.BaseURL != "" {
			l.layer(map[string]string{"baseURL": login.BaseURL}, FromLogin, map[string]string{"baseURL": CredentialsFileName})
		}
	}
	env := map[string]string{}
	for name, v := range map[string]string{"model": session.EnvModel, "baseURL": session.EnvBaseURL} {
		if s := strings.TrimSpace(getenv(v)); s != "" {
			env[name] = s
		}
	}
	l.layer(env, FromEnvironment, map[string]string{"model": session.EnvModel, "baseURL": session.EnvBaseURL})
	if l.Dir != "" {
		path := filepath.Join(l.Dir, UserSettingsFileName)
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			l.Problems = append(l.Problems, session.Problem{Field: path, Message: err.Error()})
		default:
			var problems []session.Problem
			l.User, problems = l.User.Apply(b, FromUserFile)
			for _, p := range problems {
				p.Field = path + ": " + p.Field
				l.Problems = append(l.Problems, p)
			}
		}
	}
	dir := l.Dir
	user := &l.User
	if dir != "" {
		l.Getenv = withStoredKey(getenv, dir, func() string { return user.Settings.APIKeyEnv })
	} else {
		l.Getenv = getenv
	}
	l.Endpoints = &Endpoints{dir: dir}
	return l
}

// layer applies the string settings of m as the layer from; rename names
// the setting as the problems should (the environment variable).
func (l *Loaded) layer(m map[string]string, from Source, rename map[string]string) {
	if len(m) == 0 {
		return
	}
	b, _ := json.Marshal(m)
	var problems []session.Problem
	l.User, problems = l.User.Apply(b, from)
	for _, p := range problems {
		if n, ok := rename[p.Field]; ok {
			p.Field = n
		}
		l.Problems = append(l.Problems, p)
	}
}

// Client applies the client's options (initializationOptions,
// didChangeConfiguration) over base. What they widen is the host's to
// confirm (session.Options.User is the baseline).
func Client(base Layered, raw []byte) (Layered, []session.Problem) {
	return base.Apply(raw, FromClient)
}

func checkURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an absolute http(s) URL")
	}
	return nil
}
