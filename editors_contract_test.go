package agentls_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The Neovim and Emacs plugins are checked against editors/contract.json
// (generated from the server's declarations: go test ./lsp -run
// TestContractJSON -update). Their sources are read with focused patterns:
// the agentls.* command names and agentls/* request names they spell, and
// the argument keys of the table or plist each command call passes. Every
// use must be in the contract; a contract command a plugin does not use is
// only logged. The VS Code extension has its own check in
// editors/vscode/test/contractjson.test.ts.

// editorContract is the part of contract.json the checks read.
type editorContract struct {
	Commands []struct {
		Name      string `json:"name"`
		Arguments struct {
			Fields []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"fields"`
		} `json:"arguments"`
	} `json:"commands"`
	ClientRequests []struct {
		Method string        `json:"method"`
		Result contractShape `json:"result"`
	} `json:"clientRequests"`
	ClientNotifications []struct {
		Method     string `json:"method"`
		Capability string `json:"capability"`
	} `json:"clientNotifications"`
}

// contractShape is a Shape of contract.json: an object's fields, an
// array's items.
type contractShape struct {
	Type   string `json:"type"`
	Fields []struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
		contractShape
	} `json:"fields"`
	Items *contractShape `json:"items"`
}

// names: every field name in the shape, at any depth.
func (s contractShape) names(into map[string]bool) {
	for _, f := range s.Fields {
		into[f.Name] = true
		f.contractShape.names(into)
	}
	if s.Items != nil {
		s.Items.names(into)
	}
}

func readContract(t *testing.T) editorContract {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("editors", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c editorContract
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// pluginUse is what a plugin's source sends and answers.
type pluginUse struct {
	// Args: command name -> the argument keys its call sites pass (empty
	// when it is only named, or called without an argument).
	Args map[string]map[string]bool
	// Called: the commands with at least one call site whose argument keys
	// were read (so a required key must be among them).
	Called   map[string]bool
	Requests map[string]bool // agentls/* requests it names (answers)
	// Replies: request -> the keys of the tables or plists its handler
	// builds (the reply and what is inside it).
	Replies  map[string][]string
	Problems []string // what the reader itself found wrong
	// Code is the source without comments: a notification's capability
	// must be spelt in it (declared).
	Code string
}

func newUse() *pluginUse {
	return &pluginUse{Args: map[string]map[string]bool{}, Called: map[string]bool{}, Requests: map[string]bool{}, Replies: map[string][]string{}}
}

func (u *pluginUse) name(cmd string) {
	if u.Args[cmd] == nil {
		u.Args[cmd] = map[string]bool{}
	}
}

func (u *pluginUse) call(cmd string, keys []string) {
	u.name(cmd)
	u.Called[cmd] = true
	for _, k := range keys {
		u.Args[cmd][k] = true
	}
}

// checkPlugin compares a plugin's use with the contract both ways: the
// problems (a command, argument key or request the contract does not have;
// a required argument no call site passes) and the contract commands the
// plugin does not use.
func checkPlugin(c editorContract, u *pluginUse) (problems, unused []string) {
	problems = append(problems, u.Problems...)
	declared := map[string]int{}
	for i, cmd := range c.Commands {
		declared[cmd.Name] = i
	}
	for _, name := range sortedKeys(u.Args) {
		i, ok := declared[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("command %s is not in the contract", name))
			continue
		}
		fields := map[string]bool{}
		for _, f := range c.Commands[i].Arguments.Fields {
			fields[f.Name] = true
			if f.Required && u.Called[name] && !u.Args[name][f.Name] {
				problems = append(problems, fmt.Sprintf("%s: no call passes the required argument %q", name, f.Name))
			}
		}
		for _, k := range sortedKeys(u.Args[name]) {
			if !fields[k] {
				problems = append(problems, fmt.Sprintf("%s: argument %q is not in the contract", name, k))
			}
		}
	}
	for _, cmd := range c.Commands {
		if _, ok := u.Args[cmd.Name]; !ok {
			unused = append(unused, cmd.Name)
		}
	}
	methods := map[string]bool{}
	for _, r := range c.ClientRequests {
		methods[r.Method] = true
	}
	for _, n := range c.ClientNotifications {
		methods[n.Method] = true
		if !u.Requests[n.Method] {
			problems = append(problems, fmt.Sprintf("notification %s is not taken (the plugins take every agentls/* notification)", n.Method))
		}
		capName := n.Capability[strings.LastIndexByte(n.Capability, '.')+1:]
		if !strings.Contains(u.Code, capName) {
			problems = append(problems, fmt.Sprintf("notification %s: the capability %s is not declared", n.Method, n.Capability))
		}
	}
	for _, m := range sortedKeys(u.Requests) {
		if !methods[m] {
			problems = append(problems, fmt.Sprintf("request %s is not in the contract", m))
		}
	}
	for _, r := range c.ClientRequests {
		if !u.Requests[r.Method] {
			problems = append(problems, fmt.Sprintf("request %s is not answered (the plugins answer every agentls/* request)", r.Method))
			continue
		}
		keys, ok := u.Replies[r.Method]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: its handler was not found", r.Method))
			continue
		}
		names := map[string]bool{}
		r.Result.names(names)
		for _, k := range keys {
			if !names[k] {
				problems = append(problems, fmt.Sprintf("%s: reply key %q is not in the contract", r.Method, k))
			}
		}
		top := r.Result
		if top.Type == "array" && top.Items != nil {
			top = *top.Items
		}
		for _, f := range top.Fields {
			if f.Required && !slices.Contains(keys, f.Name) {
				problems = append(problems, fmt.Sprintf("%s: the reply never has the required %q", r.Method, f.Name))
			}
		}
	}
	return problems, unused
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var (
	luaCommandString = regexp.MustCompile(`['"](agentls\.[A-Za-z]+)['"]`)
	luaRequireString = regexp.MustCompile(`require\(\s*['"]agentls\.[A-Za-z]+['"]\s*\)`)
	requestString    = regexp.MustCompile(`['"](agentls/[A-Za-z]+)['"]?`)
	luaCommandsTable = regexp.MustCompile(`(?s)M\.commands\s*=\s*\{(.*?)\n\}`)
	luaTableEntry    = regexp.MustCompile(`(\w+)\s*=\s*['"](agentls\.[A-Za-z]+)['"]`)
	luaCommandRef    = regexp.MustCompile(`M\.commands\.(\w+)`)
	luaRunCall       = regexp.MustCompile(`\bM\.run\(\s*`)
	luaArgumentsList = regexp.MustCompile(`^\s*,\s*arguments\s*=\s*\{\s*`)
	luaFuncStart     = regexp.MustCompile(`(?m)^(local )?function |^\S.*= function\(`)
	elispCall        = regexp.MustCompile(`\((agentls--\w+)\s+"(agentls\.[A-Za-z]+)"`)
	elispCommandStr  = regexp.MustCompile(`[^\\]"(agentls\.[A-Za-z]+)"`)
)

// luaUses reads the Neovim plugin: the names in M.commands (every quoted
// agentls.* string), and per call site (`exec(M.commands.x, {...})`,
// `M.run_command(M.commands.x, args, ...)`, `command = M.commands.x,
// arguments = { {...} }`, `M.run({...})` or `M.run(args)`) the keys of the
// table it passes; a variable is read from its `local v = {...}` and its
// `v.key =` assignments in the same function.
func luaUses(src string) *pluginUse {
	u := newUse()
	code := stripLuaComments(src)
	u.Code = code
	for _, req := range luaRequireString.FindAllString(code, -1) {
		code = strings.Replace(code, req, "require()", 1)
	}
	for _, m := range luaCommandString.FindAllStringSubmatch(code, -1) {
		u.name(m[1])
	}
	for _, m := range requestString.FindAllStringSubmatch(code, -1) {
		u.Requests[m[1]] = true
	}
	alias := map[string]string{}
	if m := luaCommandsTable.FindStringSubmatch(code); m != nil {
		for _, e := range luaTableEntry.FindAllStringSubmatch(m[1], -1) {
			alias[e[1]] = e[2]
		}
	} else {
		u.Problems = append(u.Problems, "no M.commands table")
	}
	for _, loc := range luaCommandRef.FindAllStringSubmatchIndex(code, -1) {
		key := code[loc[2]:loc[3]]
		cmd, ok := alias[key]
		if !ok {
			u.Problems = append(u.Problems, fmt.Sprintf("M.commands.%s is not in M.commands", key))
			continue
		}
		rest := code[loc[1]:]
		switch {
		case strings.HasPrefix(strings.TrimLeft(rest, " \t"), ","):
			after := strings.TrimLeft(strings.TrimLeft(rest, " \t")[1:], " \t\n")
			if m := luaArgumentsList.FindStringIndex(rest); m != nil {
				// command = M.commands.x, arguments = { {...} } or {}
				inner := rest[m[1]:]
				if strings.HasPrefix(inner, "{") {
					u.call(cmd, luaTableKeys(inner))
				} else {
					u.call(cmd, nil)
				}
			} else {
				u.call(cmd, luaValueKeys(code, loc[0], after))
			}
		}
	}
	for _, loc := range luaRunCall.FindAllStringIndex(code, -1) {
		u.call(alias["run"], luaValueKeys(code, loc[0], code[loc[1]:]))
	}
	// The handlers of the agentls/* requests: ['agentls/x'] = fn, and the
	// keys of the tables fn builds (and its v.key = assignments).
	for _, m := range regexp.MustCompile(`\[\s*'(agentls/\w+)'\s*\]\s*=\s*(\w+)`).FindAllStringSubmatch(code, -1) {
		body := regexp.MustCompile(`(?s)\nlocal function ` + m[2] + `\(.*?\nend\n`).FindString(code)
		if body == "" {
			continue
		}
		keys := []string{}
		for i := range len(body) {
			if body[i] == '{' {
				keys = append(keys, luaTableKeys(body[i:])...)
			}
		}
		for _, a := range regexp.MustCompile(`\b\w+\.(\w+)\s*=[^=]`).FindAllStringSubmatch(body, -1) {
			keys = append(keys, a[1])
		}
		u.Replies[m[1]] = keys
	}
	return u
}

// luaValueKeys: the keys of the table literal v starts with, or of the
// variable v names (its literal and assignments before at in its function).
func luaValueKeys(code string, at int, v string) []string {
	if strings.HasPrefix(v, "{") {
		return luaTableKeys(v)
	}
	name := regexp.MustCompile(`^\w+`).FindString(v)
	if name == "" || name == "nil" {
		return nil
	}
	start := 0
	for _, f := range luaFuncStart.FindAllStringIndex(code[:at], -1) {
		start = f[0]
	}
	scope := code[start:at]
	var keys []string
	for _, m := range regexp.MustCompile(`local\s+`+name+`\s*=\s*\{`).FindAllStringIndex(scope, -1) {
		keys = append(keys, luaTableKeys(scope[m[1]-1:])...)
	}
	for _, m := range regexp.MustCompile(`\b`+name+`\.(\w+)\s*=[^=]`).FindAllStringSubmatch(scope, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// luaTableKeys: the keys (`k = ...`, `['k'] = ...`) at the top level of the
// table constructor s starts with.
func luaTableKeys(s string) []string {
	var keys []string
	depth, entry := 0, 1
	check := func(e string) {
		if m := regexp.MustCompile(`^\s*(?:(\w+)|\[\s*['"](\w+)['"]\s*\])\s*=[^=]`).FindStringSubmatch(e); m != nil {
			keys = append(keys, m[1]+m[2])
		}
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"':
			q := s[i]
			for i++; i < len(s) && s[i] != q; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{', '(', '[':
			depth++
		case '}', ')', ']':
			depth--
			if depth == 0 {
				check(s[entry:i])
				return keys
			}
		case ',':
			if depth == 1 {
				check(s[entry:i])
				entry = i + 1
			}
		}
	}
	return keys
}

func stripLuaComments(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "--"); i >= 0 && !strings.ContainsAny(line[:i], `'"`) {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// elispUses reads the Emacs package: every "agentls.*" string, the
// agentls/* request symbols it dispatches on, and per call site
// `(agentls--exec "agentls.x" ARG ...)` or `(agentls--task "agentls.x"
// ARG)` the plist keys of ARG (a `(list :k v ...)` or a backquoted plist);
// the value of a key is not read for keys.
func elispUses(src string) *pluginUse {
	u := newUse()
	code := stripElispComments(src)
	u.Code = code
	for _, m := range elispCommandStr.FindAllStringSubmatch(code, -1) {
		u.name(m[1])
	}
	for _, m := range regexp.MustCompile(`['"](agentls/[A-Za-z]+)`).FindAllStringSubmatch(code, -1) {
		u.Requests[m[1]] = true
	}
	for _, loc := range elispCall.FindAllStringSubmatchIndex(code, -1) {
		fn, cmd := code[loc[2]:loc[3]], code[loc[4]:loc[5]]
		if fn != "agentls--exec" && fn != "agentls--task" {
			continue
		}
		rest := strings.TrimLeft(code[loc[1]:], " \t\n")
		form, ok := readSexp(rest)
		if !ok {
			u.Problems = append(u.Problems, fmt.Sprintf("(%s %q ...): argument not read", fn, cmd))
			continue
		}
		u.call(cmd, plistKeys(form))
	}
	// The handlers of the agentls/* requests: ('agentls/x (fn params)) in
	// the dispatch, and the keys of every (list :k v ...) fn builds.
	// A handler that answers later, ('agentls/x (agentls--later (lambda
	// (_id) (list :result (agentls--x params))))), is the last function of
	// the entry whose defun builds a reply.
	for _, m := range regexp.MustCompile(`\('(agentls/\w+)\s+\((agentls--[\w-]+)`).FindAllStringSubmatchIndex(code, -1) {
		method := code[m[2]:m[3]]
		_, end, ok := readForm(code, m[0])
		if !ok {
			u.Problems = append(u.Problems, fmt.Sprintf("%s: its handler entry is not read", method))
			continue
		}
		var names []string
		for _, f := range regexp.MustCompile(`\((agentls--[\w-]+)`).FindAllStringSubmatch(code[m[0]:end], -1) {
			names = append(names, f[1])
		}
		for i := len(names) - 1; i >= 0; i-- {
			j := strings.Index(code, "(defun "+names[i]+" ")
			if j < 0 {
				continue
			}
			form, ok := readSexp(code[j:])
			if !ok {
				u.Problems = append(u.Problems, fmt.Sprintf("%s: not read", names[i]))
				break
			}
			if keys := listKeys(form, []string{}); len(keys) > 0 || i == 0 {
				u.Replies[method] = keys
				break
			}
		}
	}
	return u
}

// listKeys: the keys of every (list :k v ...) form inside f.
func listKeys(f sexp, keys []string) []string {
	if len(f.List) > 0 && f.List[0].Atom == "list" {
		keys = append(keys, plistKeys(sexp{List: f.List[1:]})...)
	}
	for _, e := range f.List {
		keys = listKeys(e, keys)
	}
	return keys
}

// sexp is an atom (Atom set) or a list.
type sexp struct {
	Atom string
	List []sexp
}

// readSexp reads one form from s; quote, backquote, comma and ,@ are
// dropped (the keys are the same).
func readSexp(s string) (sexp, bool) {
	f, _, ok := readForm(s, 0)
	return f, ok
}

func readForm(s string, i int) (sexp, int, bool) {
	for i < len(s) && strings.ContainsRune(" \t\n'`,@", rune(s[i])) {
		i++
	}
	if i >= len(s) {
		return sexp{}, i, false
	}
	switch s[i] {
	case '(':
		var l []sexp
		i++
		for {
			for i < len(s) && strings.ContainsRune(" \t\n", rune(s[i])) {
				i++
			}
			if i >= len(s) {
				return sexp{}, i, false
			}
			if s[i] == ')' {
				return sexp{List: l}, i + 1, true
			}
			f, j, ok := readForm(s, i)
			if !ok {
				return sexp{}, j, false
			}
			l = append(l, f)
			i = j
		}
	case ')':
		return sexp{}, i, false
	case '"':
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		return sexp{Atom: s[i : j+1]}, j + 1, true
	}
	j := i
	for j < len(s) && !strings.ContainsRune(" \t\n()\"", rune(s[j])) {
		j++
	}
	return sexp{Atom: s[i:j]}, j, true
}

// plistKeys: the :keywords of a plist form, not looking inside a key's
// value; forms that build the plist ((list ...), ,@(when ...)) are read
// through.
func plistKeys(f sexp) []string {
	var keys []string
	for i := 0; i < len(f.List); i++ {
		e := f.List[i]
		switch {
		case strings.HasPrefix(e.Atom, ":"):
			keys = append(keys, e.Atom[1:])
			i++ // its value
		case e.List != nil:
			keys = append(keys, plistKeys(e)...)
		}
	}
	return keys
}

func stripElispComments(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, ";"); i >= 0 && !strings.Contains(line[:i], `"`) {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func readPlugin(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var plugins = []struct {
	name, path string
	read       func(string) *pluginUse
}{
	{"neovim", "editors/nvim/lua/agentls/init.lua", luaUses},
	{"emacs", "editors/emacs/agentls.el", elispUses},
}

// TestPluginsMatchTheContract: the Neovim and Emacs plugins send only
// commands and argument keys the server declares, pass every required
// argument, answer every agentls/* request and take every agentls/*
// notification, declaring its capability.
func TestPluginsMatchTheContract(t *testing.T) {
	c := readContract(t)
	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			u := p.read(readPlugin(t, p.path))
			if len(u.Called) == 0 {
				t.Fatalf("%s: no command call read; the patterns no longer fit the source", p.path)
			}
			problems, unused := checkPlugin(c, u)
			for _, pr := range problems {
				t.Errorf("%s: %s", p.path, pr)
			}
			for _, name := range sortedKeys(u.Args) {
				t.Logf("%s sends %s with %v", p.name, name, sortedKeys(u.Args[name]))
			}
			for _, m := range sortedKeys(u.Replies) {
				t.Logf("%s answers %s with keys %v", p.name, m, u.Replies[m])
			}
			if len(unused) > 0 {
				t.Logf("%s does not use %s (allowed)", p.name, strings.Join(unused, ", "))
			}
		})
	}
}

// TestPluginCheckFails: the checks catch a renamed command, a renamed
// argument key, a renamed request, a notification not taken or its
// capability not declared, and a contract whose argument was renamed under
// the plugin.
func TestPluginCheckFails(t *testing.T) {
	c := readContract(t)
	renamedPrompt := readContract(t)
	for i, cmd := range renamedPrompt.Commands {
		if cmd.Name == "agentls.run" {
			for j, f := range cmd.Arguments.Fields {
				if f.Name == "prompt" {
					renamedPrompt.Commands[i].Arguments.Fields[j].Name = "text"
				}
			}
		}
	}
	for _, tc := range []struct {
		plugin   int
		from, to string // a change to the plugin's source
		contract editorContract
		want     string // in one of the problems
	}{
		{0, `'agentls.showReport'`, `'agentls.showReports'`, c, "command agentls.showReports is not in the contract"},
		{0, `{ taskId = id }`, `{ taskID = id }`, c, `agentls.undo: argument "taskID" is not in the contract`},
		{0, `{ { taskId = task_id } }`, `{ { task = task_id } }`, c, `agentls.cancel: argument "task" is not in the contract`},
		{0, `followUp = task_id`, `follow_up = task_id`, c, `agentls.run: argument "follow_up" is not in the contract`},
		{0, `args.mode = args.mode`, `args.kind = args.mode`, c, `agentls.run: argument "kind" is not in the contract`},
		{0, `['agentls/diagnostics']`, `['agentls/diagnostic']`, c, "request agentls/diagnostic is not in the contract"},
		{0, `M.commands.undo,`, `M.commands.undoo,`, c, "M.commands.undoo is not in M.commands"},
		{0, "", "", renamedPrompt, `agentls.run: argument "prompt" is not in the contract`},
		{0, "", "", renamedPrompt, `agentls.run: no call passes the required argument "text"`},
		{1, `"agentls.undo"`, `"agentls.undoo"`, c, "command agentls.undoo is not in the contract"},
		{1, `"agentls.cancel" (list :taskId task-id)`, `"agentls.cancel" (list :task-id task-id)`, c, `agentls.cancel: argument "task-id" is not in the contract`},
		{1, `(when mode ` + "`" + `(:mode ,mode))`, `(when mode ` + "`" + `(:kind ,mode))`, c, `agentls.run: argument "kind" is not in the contract`},
		{1, `:followUp task-id`, `:follow-up task-id`, c, `agentls.run: argument "follow-up" is not in the contract`},
		// The capability (experimental.agentls.requests) still names it: the
		// handler is what is missing.
		{1, `'agentls/saveDocuments`, `'agentls/saveDocs`, c, "agentls/saveDocuments: its handler was not found"},
		{1, "", "", renamedPrompt, `agentls.run: argument "prompt" is not in the contract`},
		{0, `return { saved = saved, failed = failed }`, `return { saved = saved, failures = failed }`, c, `agentls/saveDocuments: reply key "failures" is not in the contract`},
		{0, `return { saved = saved, failed = failed }`, `return { saved = saved, failures = failed }`, c, `agentls/saveDocuments: the reply never has the required "failed"`},
		{0, `item.version =`, `item.ver =`, c, `agentls/diagnostics: reply key "ver" is not in the contract`},
		{1, `:saved (vconcat`, `:done (vconcat`, c, `agentls/saveDocuments: reply key "done" is not in the contract`},
		{0, `['agentls/answer']`, `['agentls/answers']`, c, "notification agentls/answer is not taken"},
		{0, `answerStream`, `answer_stream_on`, c, "notification agentls/answer: the capability experimental.agentls.answerStream is not declared"},
		{1, `('agentls/answer `, `('agentls/answers `, c, "notification agentls/answer is not taken"},
		{1, `:answerStream`, `:answer-stream`, c, "notification agentls/answer: the capability experimental.agentls.answerStream is not declared"},
		{1, `:diagnostics
`, `:diags
`, c, `agentls/diagnostics: the reply never has the required "diagnostics"`},
	} {
		p := plugins[tc.plugin]
		src := readPlugin(t, p.path)
		if tc.from != "" {
			if !strings.Contains(src, tc.from) {
				t.Errorf("%s has no %q to change; update this case", p.path, tc.from)
				continue
			}
			src = strings.ReplaceAll(src, tc.from, tc.to)
		}
		problems, _ := checkPlugin(tc.contract, p.read(src))
		if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, tc.want) }) {
			t.Errorf("%s with %q -> %q: problems %q; want one with %q", p.name, tc.from, tc.to, problems, tc.want)
		}
	}
}
