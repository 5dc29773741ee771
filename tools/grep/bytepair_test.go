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

// pairAtByLoop is what indexPairAt must return.
func pairAtByLoop(s []byte, a1, b1, a2, b2 byte, d int) int {
	for i := 0; i+d < len(s); i++ {
		if (s[i] == a1 || s[i] == b1) && (s[i+d] == a2 || s[i+d] == b2) {
			return i
		}
	}
	return -1
}

// TestIndexPairAtFindsTheFirstPlacedPair: at every length around the
// 32-position step, for distances 1 to 40, with the first byte, the
// second or both at every place (and decoys: a first byte without its
// partner at the distance, a partner without its first byte), in a slice
// cut out of a larger one whose bytes past the end would complete a
// pair, indexPairAt finds the first placed pair, or -1.
func TestIndexPairAtFindsTheFirstPlacedPair(t *testing.T) {
	if !pairScan {
		t.Skip("no AVX2 on this machine: the matcher uses the one-byte anchors, which TestSearch covers")
	}
	const a1, b1, a2, b2 = 'k', 'K', 'b', 'B'
	backing := make([]byte, 400)
	for _, d := range []int{1, 2, 7, 31, 32, 33, 40} {
		for n := 0; n <= 110; n++ {
			for p := -1; p < n; p += 1 + n/17 {
				for _, decoy := range []int{-1, 0, n / 3, n - 1} {
					for i := range backing {
						backing[i] = "kKbB"[i%4]
					}
					buf := backing[100 : 100+n : 100+n]
					for i := range buf {
						buf[i] = 'x'
					}
					if decoy >= 0 && decoy < n {
						buf[decoy] = "kKbB"[decoy%4]
					}
					if p >= 0 {
						buf[p] = "kK"[p%2]
						if p+d < n {
							buf[p+d] = "bB"[p%2]
						}
					}
					if got, want := indexPairAt(buf, a1, b1, a2, b2, d), pairAtByLoop(buf, a1, b1, a2, b2, d); got != want {
						t.Fatalf("d=%d n=%d pair at %d, decoy at %d: %d, want %d (%q)", d, n, p, decoy, got, want, buf)
					}
				}
			}
		}
	}
}

func FuzzIndexPairAt(f *testing.F) {
	f.Add([]byte("maxBacktrack in a line of Go"), byte('k'), byte('K'), byte('t'), byte('T'), 3)
	f.Add(bytes.Repeat([]byte("0123456789abcdef"), 5), byte('f'), byte('F'), byte('0'), byte('0'), 1)
	f.Fuzz(func(t *testing.T, s []byte, a1, b1, a2, b2 byte, d int) {
		if !pairScan {
			t.Skip("no AVX2")
		}
		if d <= 0 || d > 1<<16 {
			return
		}
		if got, want := indexPairAt(s, a1, b1, a2, b2, d), pairAtByLoop(s, a1, b1, a2, b2, d); got != want {
			t.Fatalf("indexPairAt(%q, %q, %q, %q, %q, %d) = %d, want %d", s, a1, b1, a2, b2, d, got, want)
		}
	})
}

// TestIndexPairAgreesWithTheOneByteAnchors: on random text, indexPair
// finds the same first match as bytes.Index (exact) and indexFoldInStep
// (ignoring case), whichever two bytes of the literal anchor it.
func TestIndexPairAgreesWithTheOneByteAnchors(t *testing.T) {
	if !pairScan {
		t.Skip("no AVX2 on this machine: the matcher uses the one-byte anchors")
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("aAkKbB xX\n")
	for range 3000 {
		hay := make([]byte, r.IntN(300))
		for i := range hay {
			hay[i] = alphabet[r.IntN(len(alphabet))]
		}
		needle := make([]byte, 2+r.IntN(4))
		for i := range needle {
			needle[i] = "akbx "[r.IntN(5)]
		}
		for r1 := range needle {
			for r2 := range needle {
				if r1 == r2 {
					continue
				}
				if got, want := indexPair(hay, needle, r1, r2, true), indexFoldInStep(hay, needle, r1); got != want {
					t.Fatalf("indexPair(%q, %q, %d, %d, fold) = %d, want %d", hay, needle, r1, r2, got, want)
				}
				if got, want := indexPair(hay, needle, r1, r2, false), bytes.Index(hay, needle); got != want {
					t.Fatalf("indexPair(%q, %q, %d, %d) = %d, want %d", hay, needle, r1, r2, got, want)
				}
			}
		}
	}
}
