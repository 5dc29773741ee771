//go:build race

package mcp

// The race detector reads every byte through its instrumentation (a flood
// is read ~10 times slower) and keeps shadow memory (5 to 10 times the
// heap): the flood tests size and bound for it. The figures of record are
// from runs without it.
const raceEnabled = true
