package lsp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentls/agentls/lsp"
)

var update = flag.Bool("update", false, "rewrite editors/contract.json from the declarations")

// contractFile is the checked-in contract the editor plugins are tested
// against.
var contractFile = filepath.Join("..", "editors", "contract.json")

// TestContractJSON: editors/contract.json is what the declarations say
// (the commands the service registers, their argument and reply shapes,
// the agentls/* requests). It fails when the file is stale; -update
// rewrites it:
//
//	go test ./lsp -run TestContractJSON -update
func TestContractJSON(t *testing.T) {
	want, err := json.MarshalIndent(lsp.NewService(lsp.ServiceOptions{}).Contract(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile(contractFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(contractFile)
	if err != nil {
		t.Fatalf("%v; generate it with: go test ./lsp -run TestContractJSON -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (a command, an argument or a reply changed); regenerate it with:\n\tgo test ./lsp -run TestContractJSON -update\nand update the plugins the editor tests name", contractFile)
	}
}

// TestContractDescribesTheDeclarations: spot checks that the shapes are
// derived from the Go types (required from omitempty, embedded structs
// flattened, both agentls/* requests present).
func TestContractDescribesTheDeclarations(t *testing.T) {
	c := lsp.NewService(lsp.ServiceOptions{}).Contract()
	cmds := map[string]lsp.ContractCommand{}
	for _, cmd := range c.Commands {
		cmds[cmd.Name] = cmd
	}
	field := func(s lsp.Shape, name string) (lsp.Field, bool) {
		for _, f := range s.Fields {
			if f.Name == name {
				return f, true
			}
		}
		return lsp.Field{}, false
	}
	for _, tc := range []struct {
		cmd, field string
		arg        bool
		typ        string
		required   bool
	}{
		{lsp.CommandRun, "prompt", true, "string", true},
		{lsp.CommandRun, "mode", true, "string", false},
		{lsp.CommandRun, "range", true, "object", false},
		{lsp.CommandRun, "diagnostics", true, "array", false},
		{lsp.CommandCancel, "taskId", true, "string", true},
		{lsp.CommandRun, "changedFiles", false, "array", true},
		{lsp.CommandRun, "report", false, "string", false},
		{lsp.CommandStats, "tasks", false, "number", true}, // from the embedded *store.Stats
		{lsp.CommandStats, "markdown", false, "string", true},
		{lsp.CommandTasks, "state", true, "any", false}, // a string or a list (its own UnmarshalJSON)
	} {
		cmd, ok := cmds[tc.cmd]
		if !ok {
			t.Errorf("%s is not in the contract", tc.cmd)
			continue
		}
		s := cmd.Reply
		if tc.arg {
			s = cmd.Arguments
		}
		f, ok := field(s, tc.field)
		if !ok || f.Type != tc.typ || f.Required != tc.required {
			t.Errorf("%s %s (argument %v) = %+v, found %v; want type %s, required %v", tc.cmd, tc.field, tc.arg, f, ok, tc.typ, tc.required)
		}
	}
	if len(cmds) != len(lsp.NewService(lsp.ServiceOptions{}).Commands()) {
		t.Errorf("the contract has %d commands; the service registers %d", len(cmds), len(lsp.NewService(lsp.ServiceOptions{}).Commands()))
	}
	methods := map[string]lsp.ContractRequest{}
	for _, r := range c.ClientRequests {
		methods[r.Method] = r
	}
	if r, ok := methods[lsp.MethodDiagnostics]; !ok || r.Result.Type != "array" || r.Params.Fields[0].Name != "uris" {
		t.Errorf("%s in the contract = %+v, %v", lsp.MethodDiagnostics, r, ok)
	}
	if r, ok := methods[lsp.MethodSaveDocuments]; !ok || len(r.Result.Fields) != 2 {
		t.Errorf("%s in the contract = %+v, %v", lsp.MethodSaveDocuments, r, ok)
	}
}
