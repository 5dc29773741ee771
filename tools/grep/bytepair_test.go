package grep

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// pairByTwoScans is what indexBytePair must return: the first a or b.
func pairByTwoScans(s []byte, a, b byte) int {
	i, j := bytes.IndexByte(s, a), bytes.IndexByte(s, b)
	switch {
	case i < 0:
		return j
	case j < 0 || i < j:
		return i
	}
	return j
}

// TestIndexBytePairFindsTheFirstOfEither: at every length around the
// 32-byte step (the short scan, full steps, the overlapping last step) and
// every position of a and of b, in a slice cut out of a larger one (so a
// read past its end would see bytes that match), indexBytePair finds the
// first of either, or -1.
func TestIndexBytePairFindsTheFirstOfEither(t *testing.T) {
	if !pairScan {
		t.Skip("no AVX2 on this machine: indexFold scans each case with bytes.IndexByte, which TestSearch covers")
	}
	const a, b = 'k', 'K'
	backing := bytes.Repeat([]byte{a}, 300)
	for n := 0; n <= 100; n++ {
		for pa := -1; pa < n; pa++ {
			for _, pb := range []int{-1, 0, n / 2, n - 1, pa + 1} {
				if pb >= n {
					continue
				}
				buf := backing[100 : 100+n : 100+n]
				for i := range buf {
					buf[i] = 'x'
				}
				if pa >= 0 {
					buf[pa] = a
				}
				if pb >= 0 {
					buf[pb] = b
				}
				if got, want := indexBytePair(buf, a, b), pairByTwoScans(buf, a, b); got != want {
					t.Fatalf("n=%d a at %d, b at %d: %d, want %d", n, pa, pb, got, want)
				}
			}
		}
		for i := range backing {
			backing[i] = a
		}
	}
}

func FuzzIndexBytePair(f *testing.F) {
	f.Add([]byte("maxBacktrack in a line of Go"), byte('k'), byte('K'))
	f.Add(bytes.Repeat([]byte("0123456789abcdef"), 5), byte('f'), byte('F'))
	f.Fuzz(func(t *testing.T, s []byte, a, b byte) {
		if !pairScan {
			t.Skip("no AVX2")
		}
		if got, want := indexBytePair(s, a, b), pairByTwoScans(s, a, b); got != want {
			t.Fatalf("indexBytePair(%q, %q, %q) = %d, want %d", s, a, b, got, want)
		}
	})
}

// TestIndexFoldScansAgreeOnRandomText: the one-pass scan and the scans in
// step find the same first match of a case-insensitive literal, whichever
// of its bytes anchors.
func TestIndexFoldScansAgreeOnRandomText(t *testing.T) {
	if !pairScan {
		t.Skip("no AVX2 on this machine: only the scans in step run here")
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aAkKbB xX\n")
	needle := []byte("kab")
	for range 5000 {
		hay := make([]byte, r.IntN(200))
		for i := range hay {
			hay[i] = alphabet[r.IntN(len(alphabet))]
		}
		for rare := range needle {
			if got, want := indexFoldOnePass(hay, needle, rare), indexFoldInStep(hay, needle, rare); got != want {
				t.Fatalf("indexFold(%q, %q, %d): one pass %d, in step %d", hay, needle, rare, got, want)
			}
		}
	}
}
