package agentls_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentls/agentls"

// layers ranks the top-level packages: a package may import only packages
// of a lower or equal rank (its own layer). Anything not listed is forbidden
// from being imported by a listed layer.
var layers = map[string]int{
	"workspace": 0,
	"tools":     1,
	"agent":     2,
	"lsp":       3,
	"cmd":       4,
}

// editorFree are the layers that must run without any LSP library, so the
// same agent runs under the server, the command line and tests.
var editorFree = map[string]bool{"workspace": true, "tools": true, "agent": true}

func layerOf(importPath string) (string, bool) {
	rest, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return "", false
	}
	top, _, _ := strings.Cut(rest, "/")
	return top, true
}

// TestImportDirection reads `go list -deps` for every package of the module
// and fails on an import that points up the stack
// (workspace <- tools <- agent <- lsp <- cmd) or on go.lsp.dev reaching
// workspace, tools or agent.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		from, ok := layerOf(p.ImportPath)
		if !ok {
			continue // the module root
		}
		rank, known := layers[from]
		if !known {
			t.Errorf("package %s is in no known layer; add it to layers in deps_test.go", p.ImportPath)
			continue
		}
		checked++
		for _, dep := range p.Deps {
			if editorFree[from] && strings.HasPrefix(dep, "go.lsp.dev/") {
				t.Errorf("%s depends on %s: %s must not depend on LSP libraries", p.ImportPath, dep, from)
			}
			to, ok := layerOf(dep)
			if !ok {
				continue
			}
			if r, known := layers[to]; !known || r > rank {
				t.Errorf("%s depends on %s: %s may not import %s", p.ImportPath, dep, from, to)
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list reported no packages of the module")
	}
}
