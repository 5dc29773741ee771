package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// ArgError is a problem with a tool call's arguments that the model can
// fix: invalid JSON, an unknown or missing argument, a wrong type. Its
// message says what to send instead.
type ArgError struct{ Msg string }

func (e *ArgError) Error() string { return e.Msg }

func argErrorf(format string, a ...any) *ArgError { return &ArgError{Msg: fmt.Sprintf(format, a...)} }

// aliases maps a misspelled argument name (lower snake case) to the names it
// may stand for, in order of preference; the first that the tool has wins.
// An alias never shadows an argument given under its real name.
var aliases = map[string][]string{
	"file_path": {"path"}, "filepath": {"path"}, "filename": {"path"}, "file": {"path"},
	"file_name": {"path"}, "target_file": {"path"}, "absolute_path": {"path"}, "folder": {"path"},
	"dir_path": {"path"}, "relative_path": {"path"},
	"old_str": {"old_string"}, "old": {"old_string"}, "old_text": {"old_string"}, "search": {"pattern", "old_string"},
	"new_str": {"new_string"}, "new": {"new_string"}, "new_text": {"new_string"}, "replace": {"new_string"},
	"replacement": {"new_string"}, "replaceall": {"replace_all"}, "all": {"replace_all"},
	"cmd": {"command"}, "command_line": {"command"}, "commandline": {"command"}, "shell": {"command"},
	"script": {"command"}, "args": {"argv"},
	"dir": {"cwd"}, "directory": {"cwd"}, "working_dir": {"cwd"}, "working_directory": {"cwd"},
	"workdir": {"cwd"}, "timeout_seconds": {"timeout"}, "timeout_sec": {"timeout"}, "timeout_secs": {"timeout"},
	"regex": {"pattern"}, "regexp": {"pattern"}, "query": {"pattern"}, "expression": {"pattern"},
	"search_pattern": {"pattern"}, "glob": {"glob", "pattern"}, "include": {"glob"},
	"file_pattern": {"glob"}, "file_glob": {"glob"}, "include_pattern": {"glob"},
	"case_insensitive": {"ignore_case"}, "ignorecase": {"ignore_case"}, "insensitive": {"ignore_case"},
	"i": {"ignore_case"}, "nocase": {"ignore_case"},
	"context_lines": {"context"}, "c": {"context"},
	"max_results": {"limit"}, "max": {"limit"}, "max_count": {"limit"}, "head_limit": {"limit"},
	"max_lines": {"limit"}, "num_lines": {"limit"}, "line_count": {"limit"}, "lines": {"limit"}, "count": {"limit"},
	"start_line": {"offset"}, "line": {"offset"}, "from_line": {"offset"}, "start": {"offset"},
	"line_number": {"offset"},
	"content":     {"content", "text"}, "contents": {"content"}, "data": {"content"}, "file_text": {"content"},
	"body": {"content"}, "file_content": {"content"}, "text": {"text", "content"},
	"description": {"text"}, "title": {"text"}, "task": {"text"}, "step": {"text"},
	"overwrite": {"overwrite_unsaved"}, "force": {"overwrite_unsaved"},
	"plan": {"items"}, "todos": {"items"}, "steps": {"items"}, "tasks": {"items"}, "todo_list": {"items"},
	"state": {"status"}, "note": {"reason"}, "why": {"reason"}, "explanation": {"reason"},
}

// snake turns "filePath", "File-Path" and "FILE_PATH" into "file_path".
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '-' || r == ' ' || r == '.':
			b.WriteByte('_')
		case unicode.IsUpper(r):
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// decodeArgs decodes raw into dst (a pointer to an input struct) strictly:
// unknown arguments, missing required ones and wrong types are *ArgError
// values that name the valid arguments. tool names the tool in messages.
func decodeArgs(tool string, raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return argErrorf("%s: the arguments are not valid JSON (%v); send one JSON object, e.g. %s", tool, err, example(dst))
	}
	if dec.More() {
		return argErrorf("%s: the arguments hold more than one JSON value; send one JSON object, e.g. %s", tool, example(dst))
	}
	// Some models send the object encoded as a JSON string.
	if s, ok := v.(string); ok {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var inner any
		if dec.Decode(&inner) == nil && !dec.More() {
			if _, ok := inner.(map[string]any); ok {
				v = inner
			}
		}
	}
	t := reflect.TypeOf(dst).Elem()
	norm, err := normalize(v, t, "")
	if err != nil {
		var ae *ArgError
		if errors.As(err, &ae) {
			ae.Msg = tool + ": " + ae.Msg
		}
		return err
	}
	b, err := json.Marshal(norm)
	if err != nil {
		return fmt.Errorf("re-encode arguments: %w", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return argErrorf("%s: %v", tool, err)
	}
	return nil
}

// example is a short valid-arguments hint: the required fields with
// placeholder values.
func example(dst any) string {
	t := reflect.TypeOf(dst).Elem()
	var parts []string
	for _, f := range fieldsOf(t) {
		if f.required {
			parts = append(parts, fmt.Sprintf("%q: %s", f.name, placeholder(f.typ)))
		}
	}
	if len(parts) == 0 {
		return "{}"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func placeholder(t reflect.Type) string {
	switch jsonType(t) {
	case "string":
		return `"..."`
	case "integer", "number":
		return "1"
	case "boolean":
		return "true"
	case "array":
		return "[...]"
	}
	return "{...}"
}

// normalize checks v against t and returns it with argument names made
// canonical and lenient scalars ("10" for an integer) converted. where is
// the argument's name for messages ("" at the top).
func normalize(v any, t reflect.Type, where string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := where
	if name == "" {
		name = "the arguments"
	} else {
		name = fmt.Sprintf("argument %q", where)
	}
	switch jsonType(t) {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, argErrorf("%s must be a JSON object, not %s", name, describe(v))
		}
		return normalizeObject(m, t, where)
	case "array":
		arr, ok := v.([]any)
		if !ok {
			// One object where a list of objects is expected: a list of one.
			if _, isObj := v.(map[string]any); isObj && jsonType(t.Elem()) == "object" {
				arr = []any{v}
			} else {
				return nil, argErrorf("%s must be a JSON array, not %s", name, describe(v))
			}
		}
		out := make([]any, len(arr))
		for i, x := range arr {
			n, err := normalize(x, t.Elem(), fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, argErrorf("%s must be a string, not %s", name, describe(v))
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
				return b, nil
			}
		}
		return nil, argErrorf("%s must be true or false, not %s", name, describe(v))
	case "integer":
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = strings.TrimSpace(x)
		default:
			return nil, argErrorf("%s must be an integer, not %s", name, describe(v))
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int64(f)) && f >= -1<<53 && f <= 1<<53 {
			return int64(f), nil
		}
		return nil, argErrorf("%s must be an integer, not %s", name, describe(v))
	case "number":
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = strings.TrimSpace(x)
		default:
			return nil, argErrorf("%s must be a number, not %s", name, describe(v))
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		return nil, argErrorf("%s must be a number, not %s", name, describe(v))
	}
	return v, nil
}

func normalizeObject(m map[string]any, t reflect.Type, where string) (any, error) {
	fields := fieldsOf(t)
	byName := make(map[string]field, len(fields))
	var names []string
	for _, f := range fields {
		byName[f.name] = f
		names = append(names, f.name)
	}
	valid := strings.Join(names, ", ")
	in := "the arguments"
	if where != "" {
		in = fmt.Sprintf("argument %q", where)
	}
	// Canonical names first, so an alias never shadows a real name.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, len(m))
	from := make(map[string]string, len(m))
	var unknown []string
	for pass := 0; pass < 2; pass++ {
		for _, k := range keys {
			_, exact := byName[k]
			if exact != (pass == 0) {
				continue
			}
			canon := k
			if !exact {
				canon = ""
				s := snake(k)
				if _, ok := byName[s]; ok {
					canon = s
				}
				for _, c := range aliases[s] {
					if canon != "" {
						break
					}
					if _, ok := byName[c]; ok {
						canon = c
					}
				}
				if canon == "" {
					unknown = append(unknown, k)
					continue
				}
			}
			if m[k] == nil {
				continue // null: as if absent
			}
			if prev, dup := from[canon]; dup {
				return nil, argErrorf("%s give %q twice (as %q and %q); send it once", in, canon, prev, k)
			}
			from[canon] = k
			child := canon
			if where != "" {
				child = where + "." + canon
			}
			v, err := normalize(m[k], byName[canon].typ, child)
			if err != nil {
				return nil, err
			}
			out[canon] = v
		}
	}
	if len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = strconv.Quote(u)
		}
		word := "argument"
		if len(unknown) > 1 {
			word = "arguments"
		}
		return nil, argErrorf("unknown %s %s in %s; valid arguments: %s", word, strings.Join(quoted, ", "), in, valid)
	}
	for _, f := range fields {
		if _, ok := out[f.name]; f.required && !ok {
			return nil, argErrorf("missing required argument %q in %s; valid arguments: %s", f.name, in, valid)
		}
	}
	return out, nil
}

// describe names the JSON type of v for messages, with a short value.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("a string (%q)", x)
	case bool:
		return fmt.Sprintf("a boolean (%v)", x)
	case json.Number:
		return fmt.Sprintf("a number (%s)", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
