//go:build !race

package langserver

const raceEnabled = false
