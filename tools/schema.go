package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The JSON schema of a tool's arguments is derived from its Go input struct:
//
//	json:"name,omitempty"   the argument name; without omitempty it is required
//	desc:"..."              its description
//	enum:"a,b,c"            allowed string values
//
// The output is deterministic byte for byte (properties in field order), so
// the tool definitions are a stable prefix for the model's prompt cache.

// schemaOf returns the schema of the struct type of v.
func schemaOf(v any) json.RawMessage {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var buf bytes.Buffer
	writeSchema(&buf, t, "", "")
	return json.RawMessage(buf.Bytes())
}

// field is one argument of an input struct.
type field struct {
	name     string
	index    int
	required bool
	desc     string
	enum     []string
	typ      reflect.Type
}

// fieldsOf lists the arguments of struct type t in declaration order.
func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, index: i, required: !strings.Contains(opts, "omitempty"), desc: sf.Tag.Get("desc"), typ: sf.Type}
		if e := sf.Tag.Get("enum"); e != "" {
			f.enum = strings.Split(e, ",")
		}
		out = append(out, f)
	}
	return out
}

func writeSchema(buf *bytes.Buffer, t reflect.Type, desc string, enum string) {
	buf.WriteByte('{')
	typ := jsonType(t)
	writeKV(buf, "type", typ)
	if desc != "" {
		buf.WriteByte(',')
		writeKV(buf, "description", desc)
	}
	if enum != "" {
		buf.WriteString(`,"enum":`)
		b, _ := json.Marshal(strings.Split(enum, ","))
		buf.Write(b)
	}
	switch typ {
	case "array":
		buf.WriteString(`,"items":`)
		writeSchema(buf, t.Elem(), "", "")
	case "object":
		fields := fieldsOf(t)
		buf.WriteString(`,"properties":{`)
		var required []string
		for i, f := range fields {
			if i > 0 {
				buf.WriteByte(',')
			}
			b, _ := json.Marshal(f.name)
			buf.Write(b)
			buf.WriteByte(':')
			writeSchema(buf, f.typ, f.desc, strings.Join(f.enum, ","))
			if f.required {
				required = append(required, f.name)
			}
		}
		buf.WriteByte('}')
		if len(required) > 0 {
			buf.WriteString(`,"required":`)
			b, _ := json.Marshal(required)
			buf.Write(b)
		}
		buf.WriteString(`,"additionalProperties":false`)
	}
	buf.WriteByte('}')
}

func writeKV(buf *bytes.Buffer, k, v string) {
	kb, _ := json.Marshal(k)
	vb, _ := json.Marshal(v)
	buf.Write(kb)
	buf.WriteByte(':')
	buf.Write(vb)
}

// jsonType names the JSON schema type of a Go type.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct:
		return "object"
	}
	panic(fmt.Sprintf("tools: no JSON schema type for %s", t))
}
