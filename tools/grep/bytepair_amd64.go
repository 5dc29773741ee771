//go:build amd64 && !purego

package grep

import "golang.org/x/sys/cpu"

// pairScan: indexBytePair is the AVX2 scan of bytepair_amd64.s.
var pairScan = cpu.X86.HasAVX2

// indexBytePair returns the index of the first a or b in s, or -1, in one
// pass of 32 bytes per step; it needs AVX2 (pairScan).
//
//go:noescape
func indexBytePair(s []byte, a, b byte) int

// indexPairAt returns the first i with s[i] one of a1, b1 and s[i+d] one
// of a2, b2, or -1 (d > 0), comparing 32 positions per step; it needs
// AVX2 (pairScan).
//
//go:noescape
func indexPairAt(s []byte, a1, b1, a2, b2 byte, d int) int
