package redact

import (
	"strings"

	"github.com/agentls/agentls/internal/lazyregexp"
)

// A shape is a kind of secret recognised by its value wherever it appears
// (a command's output, a file read, the model's answer), whatever variable
// or file held it: the prefixes providers put on their keys, private key
// blocks, signed tokens. Only shapes that ordinary code does not take are
// listed: each needs its provider's prefix and a random-looking body.
type shape struct {
	name string
	// anchors are literal strings one of which every match holds; text
	// without any of them is not searched (the regexps cost more than
	// strings.Contains on every log line and tool result).
	anchors []string
	re      *lazyregexp.Regexp
	// random, when set, rejects matches whose body is not random-looking
	// (an identifier such as sk-learn-contrib-packages-list).
	random bool
}

var shapes = []shape{
	{name: "OpenAI / Anthropic key", anchors: []string{"sk-"}, random: true,
		re: lazyregexp.New(`\bsk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`)},
	{name: "GitHub token", anchors: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		re: lazyregexp.New(`\bgh[pousr]_[A-Za-z0-9]{30,}`)},
	{name: "GitHub fine-grained token", anchors: []string{"github_pat_"},
		re: lazyregexp.New(`\bgithub_pat_[A-Za-z0-9_]{22,}`)},
	{name: "GitLab token", anchors: []string{"glpat-"},
		re: lazyregexp.New(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{name: "Slack token", anchors: []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"},
		re: lazyregexp.New(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{name: "Slack webhook", anchors: []string{"hooks.slack.com/"},
		re: lazyregexp.New(`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+`)},
	{name: "AWS access key ID", anchors: []string{"AKIA", "ASIA"},
		re: lazyregexp.New(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{name: "Google API key", anchors: []string{"AIza"},
		re: lazyregexp.New(`\bAIza[0-9A-Za-z_-]{35}`)},
	{name: "JSON web token", anchors: []string{"eyJ"},
		re: lazyregexp.New(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)},
	// A private key block, to its END line; a block cut before its END
	// (a truncated output) is hidden to where its base64 stops. [^"] keeps
	// a match inside one JSON string.
	{name: "private key block", anchors: []string{"PRIVATE KEY-----"},
		re: lazyregexp.New(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\:,-]*)`)},
}

// hideShapes replaces every secret of a known shape in s with Text.
func hideShapes(s string) string {
	for _, sh := range shapes {
		if !containsAny(s, sh.anchors) {
			continue
		}
		s = sh.re.ReplaceAllStringFunc(s, func(m string) string {
			if sh.random && !randomLooking(m[strings.IndexByte(m, '-')+1:]) {
				return m
			}
			return Text
		})
	}
	return s
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// randomLooking reports whether body looks generated rather than written:
// it holds digits, lower- and upper-case letters, or digits and letters
// without the dashes that separate words.
func randomLooking(body string) bool {
	var digit, lower, upper, dash int
	for _, r := range body {
		switch {
		case r >= '0' && r <= '9':
			digit++
		case r >= 'a' && r <= 'z':
			lower++
		case r >= 'A' && r <= 'Z':
			upper++
		case r == '-' || r == '_':
			dash++
		}
	}
	mixed := 0
	for _, n := range []int{digit, lower, upper} {
		if n > 0 {
			mixed++
		}
	}
	return mixed == 3 || (mixed == 2 && digit > 0 && dash*8 < len(body))
}

// Shaped reports whether s holds a secret of a known shape.
func Shaped(s string) bool { return hideShapes(s) != s }
