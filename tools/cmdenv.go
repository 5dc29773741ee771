package tools

import (
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// secretName matches environment variable names that mark a secret. It
// is agent/redact's SecretName (the one definition, which tools may not
// import: it sits above them), written as one regexp; a test of
// agent/redact checks that CommandEnv drops every name SecretName marks.
// PWD and OLDPWD take a secret word but hold none (isSecret).
var secretName = lazyregexp.New(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION|PRIVATE|WEBHOOK|CONNECTION_?STRING)|(^|_)(PASS|PWD|PW|JWT|DSN|PAT|PIN|OTP)(_|$)`)

// urlUserInfo matches the user information of URLs inside a value
// ("https://user:pass@host", also in lists such as NO_PROXY or PIP_INDEX_URL).
var urlUserInfo = lazyregexp.New(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s]*@`)

// envNames are the variables commands get by name: what builds and tests
// of the common toolchains read. Everything else is dropped, in
// particular the ways into the user's session (TMUX, SSH_AUTH_SOCK,
// DBUS_SESSION_BUS_ADDRESS, DOCKER_HOST, XDG_RUNTIME_DIR, DISPLAY,
// WAYLAND_DISPLAY, GPG_AGENT_INFO, KUBECONFIG...).
var envNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "LANG": true, "LANGUAGE": true,
	"TERM": true, "TZ": true, "TMPDIR": true, "PWD": true, "COLUMNS": true, "LINES": true, "NO_COLOR": true,
	"XDG_CACHE_HOME": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_STATE_HOME": true,
	// C and C++ toolchains.
	"CC": true, "CXX": true, "CPP": true, "LD": true, "AR": true, "CFLAGS": true, "CXXFLAGS": true, "CPPFLAGS": true,
	"LDFLAGS": true, "LIBS": true, "PKG_CONFIG_PATH": true, "PKG_CONFIG": true, "LD_LIBRARY_PATH": true,
	"LIBRARY_PATH": true, "C_INCLUDE_PATH": true, "CPLUS_INCLUDE_PATH": true, "CPATH": true, "MAKEFLAGS": true,
	// Rust, Node, Python, Java, Ruby.
	"CARGO_HOME": true, "RUSTUP_HOME": true, "RUSTUP_TOOLCHAIN": true, "RUSTFLAGS": true, "RUST_BACKTRACE": true,
	"RUST_LOG": true, "NODE_PATH": true, "NODE_OPTIONS": true, "NODE_ENV": true, "NODE_EXTRA_CA_CERTS": true,
	"NVM_DIR": true, "VIRTUAL_ENV": true, "CONDA_PREFIX": true, "PYENV_ROOT": true, "PYENV_VERSION": true,
	"JAVA_HOME": true, "JAVA_OPTS": true, "MAVEN_OPTS": true, "GRADLE_USER_HOME": true, "GEM_HOME": true,
	"GEM_PATH": true, "BUNDLE_PATH": true, "DENO_DIR": true, "BUN_INSTALL": true,
	// Certificates and proxies (user information is cut from URLs).
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "REQUESTS_CA_BUNDLE": true, "CURL_CA_BUNDLE": true,
	"GIT_SSL_CAINFO": true, "HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
	"CI": true, "OPENAI_BASE_URL": true,
}

// goVar matches Go's own variables (GOPATH, GOFLAGS, GO111MODULE), not
// GOOGLE_CLOUD_PROJECT.
var goVar = lazyregexp.New(`^GO[A-Z0-9]+$`)

// envPrefixes are families of variables commands get: cgo (CGO_*),
// locales (LC_*), Python, npm configuration, cargo and pip settings. A
// secret-looking name inside them is still dropped.
var envPrefixes = []string{"CGO_", "LC_", "PYTHON", "NPM_CONFIG_", "npm_config_", "CARGO_", "PIP_", "UV_", "POETRY_", "YARN_", "PNPM_"}

// envAllowed reports whether CommandEnv passes variable k on.
func envAllowed(k string) bool {
	if envNames[k] || goVar.MatchString(k) {
		return true
	}
	for _, p := range envPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// CommandEnv is base as commands get it: an allowlist of what builds and
// tests read (envNames and envPrefixes: PATH, HOME, LANG and LC_*, GO* and
// CGO_*, compilers and their flags, the Rust, Node, Python and Java
// settings, certificates and proxies); everything else is dropped, so
// TMUX, SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS, DOCKER_HOST or
// XDG_RUNTIME_DIR never lead a command into the user's session. Within the
// allowlist it still drops the variables named in secretNames (the
// configured API key variable), AGENTLS_*, every variable whose name marks
// a secret (KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH,
// COOKIE, SESSION, PRIVATE, ..._PASS, ..._PWD, JWT, WEBHOOK: NPM_CONFIG_
// _AUTH_TOKEN, CARGO_REGISTRY_TOKEN) and any variable whose value is the
// value of a secret one (allowed or not); it removes the user information
// of every URL in the values that remain (OPENAI_BASE_URL=https://u:p@host
// becomes https://host), and sets a pager that never waits (PAGER=cat,
// GIT_PAGER=cat, GIT_TERMINAL_PROMPT=0).
func CommandEnv(base, secretNames []string) []string {
	drop := map[string]bool{"OPENAI_API_KEY": true, "AZURE_OPENAI_API_KEY": true, "PAGER": true, "GIT_PAGER": true, "GIT_TERMINAL_PROMPT": true}
	for _, s := range secretNames {
		drop[s] = true
	}
	secretValues := map[string]bool{}
	isSecret := func(k string) bool {
		return drop[k] || strings.HasPrefix(k, "AGENTLS_") || (secretName.MatchString(k) && k != "PWD" && k != "OLDPWD")
	}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if isSecret(k) && len(v) >= 8 && k != "PAGER" && k != "GIT_PAGER" {
			secretValues[v] = true
		}
	}
	out := make([]string, 0, len(base)+3)
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || !envAllowed(k) || isSecret(k) || secretValues[v] {
			continue
		}
		if strings.Contains(v, "@") {
			v = urlUserInfo.ReplaceAllString(v, "$1")
		}
		out = append(out, k+"="+v)
	}
	return append(out, "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0")
}

// UserEnv is base as the user's own programs get it (a hook or an MCP
// server from the user's settings or the ACP client): the user's whole
// environment, as their shell and Claude Code give it, minus what is
// agentls's own: the variables named in secretNames (the configured API
// key variable), OPENAI_API_KEY and AZURE_OPENAI_API_KEY, every AGENTLS_*
// variable, any variable that holds the value of one of those, and the
// user information of OPENAI_BASE_URL.
func UserEnv(base, secretNames []string) []string {
	drop := map[string]bool{"OPENAI_API_KEY": true, "AZURE_OPENAI_API_KEY": true}
	for _, s := range secretNames {
		drop[s] = true
	}
	own := func(k string) bool { return drop[k] || strings.HasPrefix(k, "AGENTLS_") }
	secretValues := map[string]bool{}
	for _, kv := range base {
		if k, v, _ := strings.Cut(kv, "="); own(k) && len(v) >= 8 {
			secretValues[v] = true
		}
	}
	out := make([]string, 0, len(base))
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || own(k) || secretValues[v] {
			continue
		}
		if k == "OPENAI_BASE_URL" && strings.Contains(v, "@") {
			// agentls's endpoint: its user information is agentls's secret.
			kv = k + "=" + urlUserInfo.ReplaceAllString(v, "$1")
		}
		out = append(out, kv)
	}
	return out
}
