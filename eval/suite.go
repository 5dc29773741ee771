package eval

import (
	"embed"
	"io/fs"
)

//go:embed suite
var builtin embed.FS

// Builtin is the suite built into agentls: suite/tasks/*.txtar and the
// fixture repositories they run in, suite/fixtures/*.txtar.
func Builtin() fs.FS {
	sub, err := fs.Sub(builtin, "suite")
	if err != nil {
		panic(err) // the folder is embedded: it exists
	}
	return sub
}
