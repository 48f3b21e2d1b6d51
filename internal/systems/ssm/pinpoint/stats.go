package pinpoint

import (
	"math"
	"slices"
)

// median returns the median of xs (the mean of the two middle values for an
// even count); NaN for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// mad is the median absolute deviation from the median: robust to outliers
// even in populations as small as SSM's handful of bricks (Ling, Kiciman and Fox 2004, §4).
func mad(xs []float64) (med, dev float64) {
	med = median(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - med)
	}
	return med, median(d)
}

// madScale makes the MAD estimate the standard deviation of normal data.
const madScale = 1.4826

// discretise turns a series into Tarzan's binary alphabet: 'b' where the
// value rose from the previous sample, 'a' where it stayed or fell. Rises
// and falls (a state that grows until collected, an inbox that fills and
// drains) carry the pattern without depending on the level, so a freshly
// restarted brick with less state is not a deviant by level alone.
func discretise(series []float64) []byte {
	if len(series) < 2 {
		return nil
	}
	out := make([]byte, len(series)-1)
	for i := 1; i < len(series); i++ {
		if series[i] > series[i-1] {
			out[i-1] = 'b'
		} else {
			out[i-1] = 'a'
		}
	}
	return out
}

// substringFreqs counts, for every length 1..k, how often each binary
// substring of that length occurs in s (overlapping), as a fraction of the
// positions where a substring of that length can start. The result is
// indexed by code(length, bits): index (1<<length)-2+bits, so lengths 1..k
// take 2+4+...+2^k = 2^(k+1)-2 entries. One pass per length, linear in len(s).
func substringFreqs(s []byte, k int) []float64 {
	out := make([]float64, (1<<(k+1))-2)
	for l := 1; l <= k; l++ {
		if len(s) < l {
			continue
		}
		base := (1 << l) - 2
		mask := (1 << l) - 1
		code := 0
		for i, c := range s {
			code = (code << 1) & mask
			if c == 'b' {
				code |= 1
			}
			if i >= l-1 {
				out[base+code]++
			}
		}
		positions := float64(len(s) - l + 1)
		for j := base; j < base+(1<<l); j++ {
			out[j] /= positions
		}
	}
	return out
}

// substringName is the substring an index of substringFreqs stands for.
func substringName(index int) string {
	l := 1
	for index >= (1<<(l+1))-2 {
		l++
	}
	bits := index - ((1 << l) - 2)
	b := make([]byte, l)
	for i := range l {
		if bits&(1<<(l-1-i)) != 0 {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
	}
	return string(b)
}
