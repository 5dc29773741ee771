// Package benchstat summarizes the timings benchmarks and budget tests
// take: percentiles of a sample and durations in milliseconds, computed
// one way for all of them so their figures compare.
package benchstat

import (
	"cmp"
	"slices"
	"time"
)

// Percentile is the p-th percentile of v: the element at index
// len(v)*p/100 of v sorted, the last one for p = 100. v is left as it is.
// It is the zero value when v is empty.
func Percentile[T cmp.Ordered](v []T, p int) T {
	if len(v) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// Median is the 50th percentile of v: its middle element sorted, the
// upper one of the two middle ones when len(v) is even.
func Median[T cmp.Ordered](v []T) T { return Percentile(v, 50) }

// Millis is d in milliseconds, to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
