package reqtmpl

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
)

// Bounds on key spaces: a zipf table costs 8 bytes a key.
const (
	MaxUniformKeys = 1 << 40
	MaxZipfKeys    = 10_000_000
)

// ErrKeySpace is wrapped by every error of ParseKeySpace.
var ErrKeySpace = errors.New("bad key space")

// A KeySpace draws keys 0..N-1, uniformly or with Zipf popularity. It is
// read-only after ParseKeySpace; many goroutines may draw at once, each with
// its own *rand.Rand.
type KeySpace struct {
	spec string
	n    int64
	cdf  []float64 // zipf only: cdf[k] = P(key <= k), cdf[n-1] == 1
}

// ParseKeySpace parses "uniform:N" or "zipf:N:S" (S >= 0; 0 is uniform).
func ParseKeySpace(spec string) (*KeySpace, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "uniform":
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 1 || n > MaxUniformKeys {
			return nil, fmt.Errorf("%w %q: key count %q must be an integer in 1..%d", ErrKeySpace, spec, rest, int64(MaxUniformKeys))
		}
		return &KeySpace{spec: spec, n: n}, nil
	case "zipf":
		ns, ss, found := strings.Cut(rest, ":")
		if !found {
			return nil, fmt.Errorf("%w %q: want zipf:N:S, e.g. zipf:1000:1.1", ErrKeySpace, spec)
		}
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil || n < 1 || n > MaxZipfKeys {
			return nil, fmt.Errorf("%w %q: key count %q must be an integer in 1..%d", ErrKeySpace, spec, ns, MaxZipfKeys)
		}
		s, err := strconv.ParseFloat(ss, 64)
		if err != nil || !(s >= 0 && s <= 100) {
			return nil, fmt.Errorf("%w %q: exponent %q must be a number in 0..100", ErrKeySpace, spec, ss)
		}
		return &KeySpace{spec: spec, n: n, cdf: zipfCDF(int(n), s)}, nil
	default:
		return nil, fmt.Errorf("%w %q: want uniform:N or zipf:N:S", ErrKeySpace, spec)
	}
}

// N is the number of keys.
func (k *KeySpace) N() int64 { return k.n }

// String gives the spec back as parsed.
func (k *KeySpace) String() string { return k.spec }

// Draw returns one key in 0..N-1.
func (k *KeySpace) Draw(rng *rand.Rand) int64 {
	if k.cdf == nil {
		return rng.Int63n(k.n)
	}
	u := rng.Float64()
	lo, hi := 0, len(k.cdf)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if u < k.cdf[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int64(lo)
}

// zipfCDF is the inverse-CDF table of workload.Zipf (any s >= 0, unlike
// math/rand's s > 1), with Kahan summation so the tail stays exact.
func zipfCDF(n int, s float64) []float64 {
	cdf := make([]float64, n)
	var sum, carry float64
	for k := range cdf {
		y := math.Pow(float64(k+1), -s) - carry
		t := sum + y
		carry = (t - sum) - y
		sum = t
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	cdf[n-1] = 1
	return cdf
}
