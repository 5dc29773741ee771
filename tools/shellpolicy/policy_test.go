package shellpolicy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// approvedPrefixes is what a careless user could have allowed: every
// program the bypass strings use, interpreters included.
var approvedPrefixes = []string{
	"go", "go test", "go version", "go env", "echo", "ls", "git", "python3", "python", "/usr/bin/python3", "sh", "/bin/sh",
	"bash", "node", "perl", "npm", "npx", "yarn", "pnpm", "make", "find", "sed", "awk", "cargo", "tee", "cp", "mv", "ln",
	"docker", "env", "xargs", "tar", "rsync", "rg", "sort", "man", "less", "vim", "pip", "eval", "exec", "source", ".",
	"sudo", "timeout", "nice", "time", "coproc", "declare", "let", "ssh", "watch", "strace", "script", "setsid", "unshare",
	"flock", "parallel", "stdbuf", "emacs", "doas", "su", "command", "builtin", "xdg-open",
}

// bypasses reads testdata/bypass.txt and adds each injection after each
// allowed-looking command.
func bypasses(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("testdata/bypass.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("bypass.txt: %q: %v", line, err)
		}
		out = append(out, s)
	}
	bases := []string{"go test ./...", "go version", "echo hello", "ls -la", "git status"}
	injections := []string{
		";touch pwned", "; touch pwned", "\ntouch pwned", "\r\ntouch pwned", "\n\ttouch pwned", "\n   touch pwned",
		" # note\ntouch pwned", " && touch pwned", " || touch pwned", " | sh", " & touch pwned", " &", " > .agentls/settings.json",
		" >> x", " 2> x", " < x", " $(touch pwned)", " `touch pwned`", " <(touch pwned)", " >(touch pwned)", " \"$(touch pwned)\"",
		" ${IFS}x", " $X", " *", " <<EOF\nx\nEOF", "\\\ntouch pwned", "\x00touch pwned", "\u2028touch pwned",
	}
	for _, b := range bases {
		for _, in := range injections {
			out = append(out, b+in)
		}
	}
	return out
}

func TestNoBypassStringIsCovered(t *testing.T) {
	list := bypasses(t)
	if len(list) < 100 {
		t.Fatalf("only %d bypass strings; want at least 100", len(list))
	}
	approved := 0
	for _, s := range list {
		if Covered(s, approvedPrefixes) {
			approved++
			t.Errorf("covered: %q (parse %+v)", s, Parse(s))
		}
		if p := Parse(s).Prefix(); p != "" && Covered(s, []string{p}) {
			t.Errorf("%q offers the prefix %q, which covers it", s, p)
		}
	}
	t.Logf("%d bypass strings tried against %d approved prefixes: %d covered", len(list), len(approvedPrefixes), approved)
}

func TestApprovalCoversOnlyOneSimpleCommandUnderItsWords(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		prefix string
		want   bool
	}{
		{"go test ./...", "go test", true},
		{"go test", "go test", true},
		{"go test -run 'TestX|TestY' ./pkg", "go test", true},
		{`go test -run "TestX" ./...`, "go test", true},
		{"  go   test   ./...  ", "go test", true},
		{"go tester", "go test", false},
		{"go testx ./...", "go test", false},
		{"gotest", "go", false},
		{"go vet ./...", "go test", false},
		{"go test ./...\ntouch pwned", "go test", false},
		{"go test ./...\r\ntouch pwned", "go test", false},
		{"go test ./...\n  touch pwned", "go test", false},
		{"# comment\ngo test ./...", "go test", false},
		{"go test ./... # comment\ntouch pwned", "go test", false},
		{"go test ./...; touch pwned", "go test", false},
		{"go test ./... && touch pwned", "go test", false},
		{`go test -exec 'sh -c "touch pwned"' ./...`, "go test", false},
		{`python3 -c "import os"`, "python3", false},
		{"python3 --version", "python3", false},
		{`echo '{"allowCommands":["sh"]}' > .agentls/settings.json`, "echo", false},
		{"echo hello", "echo", true},
		{"echo 'a;b'", "echo", true},
		{"echo a\\;b", "echo", true},
		{"git status", "git status", true},
		{"git log --oneline -5", "git", true},
		{"git -c core.pager=sh log", "git", false},
		{"find . -name '*.go'", "find", true},
		{"find . -name x -exec rm {} ;", "find", false},
		{"sed -n 1,5p file.txt", "sed", false}, // sed is not on the list: its e command runs programs
		{"npm test", "npm test", true},
		{"npm run build", "npm", false},
		{"make test", "make", true},
		{"make --eval=x", "make", false},
		{"ls -la", "ls", true},
		{"ls -la", "ls -la", true},
		{"ls", "ls -la", false},
		{"ls", "", false},
		{"go test", "go test; rm x", false},
		{"git show HEAD~1", "git show", true},
		{"git show ~/x", "git show", false},
		{"git show x=~/y", "git show", false},
		{"git show a:~/y", "git show", false},
	} {
		if got := Covered(tc.cmd, []string{tc.prefix}); got != tc.want {
			t.Errorf("Covered(%q, %q) = %v; want %v (parse %+v)", tc.cmd, tc.prefix, got, tc.want, Parse(tc.cmd))
		}
	}
}

func TestAlwaysAllowOffersOnlySafeWordPrefixes(t *testing.T) {
	for cmd, want := range map[string]string{
		"go test ./...":                    "go test",
		"go version":                       "go version",
		"ls -la":                           "ls",
		"npm test":                         "npm test",
		"./gradlew build":                  "",
		"go test -run TestX -v ./pkg":      "go test",
		"go mod tidy":                      "go mod tidy",
		"git diff --stat HEAD~1":           "git diff",
		"git -c core.pager=sh log":         "",
		"gcc -wrapper sh,-c,id x.c":        "",
		"make":                             "make",
		"make SHELL=/tmp/x":                "",
		"python3 --version":                "",
		"python3 -c 1":                     "",
		"sh -c id":                         "",
		"env":                              "",
		"go run .":                         "",
		"go test -exec sh ./...":           "",
		"go test ./...; touch x":           "",
		"go test ./...\ntouch x":           "",
		"echo hi > .agentls/settings.json": "",
		"cp x .agentls/settings.json":      "",
		"":                                 "",
	} {
		if got := Parse(cmd).Prefix(); got != want {
			t.Errorf("Prefix(%q) = %q; want %q", cmd, got, want)
		}
	}
}

// oracle runs command in mvdan's shell interpreter with every program and
// file open recorded instead of done, and reports whether it ran exactly
// one program, with words, and opened nothing. It is independent of Parse:
// it executes the line as a shell would.
func oracle(t *testing.T, command string, words []string) bool {
	f, err := syntax.NewParser().Parse(strings.NewReader(command), "")
	if err != nil {
		return false
	}
	var calls [][]string
	opens := 0
	r, err := interp.New(
		interp.Dir(os.TempDir()), // nothing is opened: opens are refused below
		interp.Env(nil),
		interp.StdIO(nil, io.Discard, io.Discard),
		interp.CallHandler(func(ctx context.Context, args []string) ([]string, error) {
			calls = append(calls, args) // every simple command, builtins too
			return args, nil
		}),
		interp.ExecHandlers(func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(ctx context.Context, args []string) error { return nil }
		}),
		interp.OpenHandler(func(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
			opens++
			return nil, os.ErrPermission
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.Run(ctx, f)
	return len(calls) == 1 && opens == 0 && slices.Equal(calls[0], words)
}

// FuzzApprovalNeverCoversCompoundCommands: a command is covered only when
// a shell would run exactly one program, whose words start with the
// approved words, and that the old denylist (denylist_test.go, an
// independent oracle) does not know to run code named on its command line.
func FuzzApprovalNeverCoversCompoundCommands(f *testing.F) {
	for _, s := range bypasses(f) {
		f.Add(s, uint8(0))
	}
	for _, s := range []string{"go test ./...", "echo hello", "ls -la", "git status", "go test -run 'X|Y' ./..."} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, command string, pick uint8) {
		prefix := approvedPrefixes[int(pick)%len(approvedPrefixes)]
		c := Parse(command)
		if !c.CoveredBy(prefix) {
			return
		}
		if strings.IndexFunc(command, isControl) >= 0 {
			t.Fatalf("covered %q though it holds a control character", command)
		}
		pw := Parse(prefix).Words
		if len(c.Words) < len(pw) || !slices.Equal(c.Words[:len(pw)], pw) {
			t.Fatalf("covered %q by %q though its words %q do not start with %q", command, prefix, c.Words, pw)
		}
		if !oracle(t, command, c.Words) {
			t.Fatalf("covered %q by %q, but a shell runs something else than the one program %q", command, prefix, c.Words)
		}
		if why := arbitraryCode(c.Words); why != "" {
			t.Fatalf("covered %q though %s", command, why)
		}
	})
}

// TestAllowlistRefusesFlagsThatRunPrograms: a user said "Always allow" for
// the prefix; the variant runs a program named on its own command line and
// is never covered, whatever the prefix.
func TestAllowlistRefusesFlagsThatRunPrograms(t *testing.T) {
	for _, tc := range []struct{ prefix, cmd string }{
		{"gcc", "gcc -wrapper /bin/sh,-c,id x.c"},
		{"gcc", "gcc -c x.c"},
		{"go test", "go test -exec /tmp/x ./..."},
		{"go test", "go test -exec=/tmp/x ./..."},
		{"go test", "go test --exec=/tmp/x ./..."},
		{"go test", "go test ./... -exec /tmp/x"},
		{"go test", "go test -toolexec /tmp/x ./..."},
		{"go test", "go test -vettool=/tmp/x ./..."},
		{"go test", "go test -ldflags=-extld=/tmp/x ./..."},
		{"go test", "go test -run -exec /tmp/x"},
		{"go test", "go test -args -test.run X"},
		{"go vet", "go vet -vettool=/tmp/x ./..."},
		{"go build", "go build -toolexec=/tmp/x ./..."},
		{"go build", "go build -overlay=/tmp/o.json ./..."},
		{"git", "git -c core.pager=/tmp/x log"},
		{"git log", "git -c core.pager=/tmp/x log"},
		{"git diff", "git diff --ext-diff"},
		{"git diff", "git diff --textconv HEAD"},
		{"git diff", "git diff --output=/tmp/x"},
		{"git log", "git log --show-signature"},
		{"git grep", "git grep -O/tmp/x foo"},
		{"rg", "rg --pre /tmp/x foo"},
		{"rg", "rg --pre=/tmp/x foo"},
		{"rg", "rg -z foo"},
		{"rg", "rg -nz foo"},
		{"find", "find . -exec /tmp/x {} ;"},
		{"find", "find . -name x -execdir /tmp/x {} +"},
		{"find", "find . -delete"},
		{"find", "find . -fprint /tmp/x"},
		{"sort", "sort --compress-program=/tmp/x big.txt"},
		{"sort", "sort -S 1 --compress-program /tmp/x big.txt"},
		{"tar", "tar --use-compress-program=/tmp/x -cf a.tar ."},
		{"tar", "tar -cf a.tar ."},
		{"make", "make --eval=$(shell id)"},
		{"make", "make -f /tmp/Makefile"},
		{"make", "make -C /tmp"},
		{"make", "make SHELL=/tmp/x all"},
		{"python", "python -c 'import os'"},
		{"python3", "python3 -m pytest"},
		{"npm", "npm exec evil"},
		{"npm test", "npm test -- --watch"},
		{"npx", "npx evil"},
		{"cargo test", "cargo test --config target.x.runner='/tmp/x'"},
		{"cargo build", "cargo build -Zunstable-options"},
		{"pytest", "pytest -p evil_plugin"},
		{"pytest", "pytest -o addopts=-pevil"},
		{"sed", "sed -n 1e/tmp/x file"},
		{"awk", "awk 'BEGIN{system(\"id\")}'"},
		{"xargs", "xargs /tmp/x"},
		{"env", "env /tmp/x"},
		{"ls", "ls .agentls/"},
		{"cat", "cat .git/config"},
	} {
		if Covered(tc.cmd, []string{tc.prefix}) {
			t.Errorf("Covered(%q, %q) = true; want false", tc.cmd, tc.prefix)
		}
		if p := Parse(tc.cmd).Prefix(); p != "" {
			t.Errorf("Prefix(%q) = %q; want none offered", tc.cmd, p)
		}
	}
}

// TestAllowlistCoversOrdinaryUse: what a user means by an approved prefix
// still passes without a question.
func TestAllowlistCoversOrdinaryUse(t *testing.T) {
	for _, tc := range []struct{ prefix, cmd string }{
		{"go test", "go test ./..."},
		{"go test", "go test -run 'TestA|TestB' -v -count=1 -race ./pkg/..."},
		{"go test", "go test -timeout 30s -cover ./..."},
		{"go", "go vet ./..."},
		{"go build", "go build -o bin/x ./cmd/x"},
		{"go mod tidy", "go mod tidy"},
		{"git status", "git status --short"},
		{"git status", "git status -uno"},
		{"git diff", "git diff --stat HEAD~1 -- a.go"},
		{"git log", "git log --oneline -n 5"},
		{"git log", "git log -10 --format=%H"},
		{"git show", "git show -U3 HEAD:main.go"},
		{"ls", "ls -la"},
		{"cat", "cat a.txt b.txt"},
		{"head", "head -n 20 a.txt"},
		{"wc", "wc -l a.txt"},
		{"rg", "rg -n -i 'foo bar' --glob '*.go'"},
		{"rg", "rg -nC3 foo"},
		{"grep", "grep -rn foo ."},
		{"find", "find . -name '*.go' -type f"},
		{"find", `find . \( -name a -o -name b \) -print`},
		{"sort", "sort -k2 -n a.txt"},
		{"make", "make"},
		{"make", "make -j4 test"},
		{"npm test", "npm test"},
		{"cargo test", "cargo test --release -p core"},
		{"pytest", "pytest -q -k 'test_x' tests/"},
	} {
		if !Covered(tc.cmd, []string{tc.prefix}) {
			t.Errorf("Covered(%q, %q) = false; want true (%s)", tc.cmd, tc.prefix, whyNot(Default(), tc.cmd))
		}
	}
}

func whyNot(p *Policy, cmd string) string {
	_, why := p.Safe(Parse(cmd))
	return why
}

// TestUserSafeCommandsExtendTheList: the user's safeCommands add entries
// (their further words pass); they never make a compound command simple.
func TestUserSafeCommandsExtendTheList(t *testing.T) {
	p, errs := Default().With([]string{"mytool lint", "bad; rm x", "cat .agentls/x"})
	if len(errs) != 2 {
		t.Errorf("With: errors %v; want 2 (a list and a protected path)", errs)
	}
	for cmd, want := range map[string]bool{
		"mytool lint --fix ./...":    true,
		"mytool lint ./... ; rm x":   false,
		"mytool format":              false,
		"go test -exec /tmp/x ./...": false,
	} {
		if got := p.Covers(Parse(cmd), []string{"mytool", "go test"}); got != want {
			t.Errorf("Covers(%q) = %v; want %v", cmd, got, want)
		}
	}
	if Default().Covers(Parse("mytool lint"), []string{"mytool"}) {
		t.Error("the default policy covers a user's entry")
	}
}
