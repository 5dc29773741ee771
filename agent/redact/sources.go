package redact

import (
	"net/url"
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// secretName matches environment variable names that mark a secret
// anywhere in the name: OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY,
// DB_PASSWORD, SLACK_WEBHOOK_URL, GOOGLE_APPLICATION_CREDENTIALS, ...
var secretName = lazyregexp.New(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION|PRIVATE|WEBHOOK|CONNECTION_?STRING)`)

// secretWord matches short words that mark a secret only as a whole word
// of a name (PASS in DB_PASS but not in COMPASS_HOME; PWD in MYSQL_PWD;
// PAT in GITLAB_PAT but not in PATH): a password, a signed token, a data
// source name with its password, a personal access token, a PIN.
var secretWord = lazyregexp.New(`(?i)(^|_)(PASS|PWD|PW|JWT|DSN|PAT|PIN|OTP)(_|$)`)

// notSecret are names that take a secret word but hold none: the shell's
// working directories.
var notSecret = map[string]bool{"PWD": true, "OLDPWD": true}

// SecretName reports whether an environment variable's name marks its value
// as a secret. Commands never get such a variable, and its value is hidden
// at every sink. It is the one definition; tools.CommandEnv, which may not
// import this package, writes it as one regexp, and a test here checks that
// it drops every name SecretName marks.
func SecretName(name string) bool {
	if notSecret[strings.ToUpper(name)] {
		return false
	}
	return secretName.MatchString(name) || secretWord.MatchString(name)
}

// EnvSecrets returns the values of the variables of environ ("NAME=value")
// whose names mark secrets, and the user information of every value that
// is a URL with one (OPENAI_BASE_URL=https://user:pass@host/).
func EnvSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" {
			continue
		}
		if SecretName(name) {
			out = append(out, value)
		}
		out = append(out, URLSecrets(value)...)
	}
	return out
}

// URLSecrets returns what a URL carries as a secret: the password and the
// user of its user information, and its query values.
func URLSecrets(raw string) []string {
	if !strings.Contains(raw, "://") {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		out = append(out, u.User.Username())
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// URL is raw with what a URL may carry as a secret hidden: its user
// information and the values of its query. Text that does not parse as a
// URL is hidden whole. Use it wherever a base URL is shown or logged.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Text
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

// Secrets lists the secrets a Redactor hides.
func (r Redactor) Secrets() []string { return append([]string(nil), r.all()...) }

// JSON returns the JSON text b with every secret hidden, also where JSON
// escaping changed how a secret is written.
func (r Redactor) JSON(b []byte) []byte {
	s := string(b)
	for _, secret := range r.all() {
		esc := jsonEscape(secret)
		for _, form := range []string{secret, esc} {
			if strings.Contains(s, form) {
				s = strings.ReplaceAll(s, form, Text)
			}
		}
	}
	return []byte(hideShapes(s))
}

func jsonEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`, "<", `\u003c`, ">", `\u003e`, "&", `\u0026`)
	return r.Replace(s)
}
