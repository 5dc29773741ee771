//go:build !amd64 || purego

package grep

// pairScan is false: no single-pass scan for two bytes here, and
// indexFold scans for each with bytes.IndexByte.
const pairScan = false

func indexBytePair(s []byte, a, b byte) int { panic("grep: indexBytePair without pairScan") }

func indexPairAt(s []byte, a1, b1, a2, b2 byte, d int) int {
	panic("grep: indexPairAt without pairScan")
}
