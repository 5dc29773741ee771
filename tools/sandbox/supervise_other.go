//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
)

// canSupervise: elsewhere commands run directly, in a process group.
const canSupervise = false

func supervise(args []string) int {
	fmt.Fprintln(os.Stderr, "agentls: the command sandbox needs Linux")
	return 126
}

// KernelABI reports that Landlock is a Linux feature.
func KernelABI() (int, error) { return 0, errors.New("Landlock needs Linux") }
