package benchstat

import (
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // 100 ms down to 1 ms
	}
	for _, tc := range []struct {
		name string
		v    []time.Duration
		p    int
		want time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of an odd count", ms(3, 1, 2), 50, 2 * time.Millisecond},
		{"median of an even count: the upper middle", ms(4, 1, 3, 2), 50, 3 * time.Millisecond},
		{"p0 is the least", ms(5, 9, 1), 0, time.Millisecond},
		{"p100 is the greatest", ms(5, 9, 1), 100, 9 * time.Millisecond},
		{"p99 of 100", hundred, 99, 100 * time.Millisecond},
		{"p90 of 100", hundred, 90, 91 * time.Millisecond},
		{"p50 of 100", hundred, 50, 51 * time.Millisecond},
	} {
		before := slices.Clone(tc.v)
		if got := Percentile(tc.v, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(%v, %d) = %v; want %v", tc.name, tc.v, tc.p, got, tc.want)
		}
		if !slices.Equal(tc.v, before) {
			t.Errorf("%s: Percentile reordered its input: %v; was %v", tc.name, tc.v, before)
		}
	}
}

func TestMedianOfFloats(t *testing.T) {
	if got := Median([]float64{2.5, 0.5, 1.5}); got != 1.5 {
		t.Errorf("Median(2.5, 0.5, 1.5) = %v; want 1.5", got)
	}
	if got := Median([]float64(nil)); got != 0 {
		t.Errorf("Median(nil) = %v; want 0", got)
	}
}

func TestMillis(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{1500 * time.Microsecond, 1.5},
		{1500*time.Microsecond + 999*time.Nanosecond, 1.5}, // below a microsecond is dropped
		{2 * time.Second, 2000},
		{0, 0},
	} {
		if got := Millis(tc.d); got != tc.want {
			t.Errorf("Millis(%v) = %v; want %v", tc.d, got, tc.want)
		}
	}
}
