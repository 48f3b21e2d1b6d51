package array

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// BlockSize is the unit of volume I/O and of checksumming: offsets and
// lengths given to ReadAt and WriteAt are multiples of it.
const BlockSize = 4096

// Limits on the number of disks.
const (
	MinDisks = 3  // RAID-5 needs two data chunks and a parity chunk per stripe
	MaxDisks = 32 // active disks; bounds the per-stripe scratch space
)

// PolicyKind names a transient-error policy.
type PolicyKind int

// The transient-error policies of Brown and Patterson (2000) §4.1.
const (
	// Paranoid takes a disk out of service at its first error of any kind,
	// recovered errors included (Linux).
	Paranoid PolicyKind = iota + 1
	// Tolerant logs recovered errors, retries a failed command once and
	// takes the disk out of service only when the retry fails too, or at
	// once for an illegal command or a missing disk (Solaris; Windows is the
	// same with reconstruction left to the operator).
	Tolerant
	// Threshold handles each error like Tolerant but never fails a disk for
	// a single bad block: it counts errors of every kind and takes the disk
	// out of service when Count of them fall within Period — the policy the
	// paper asks for and none of the three systems had.
	Threshold
	// StrictWrites handles each error like Tolerant, with two differences
	// that make it Windows 2000's column of Table 1 (§4.1): a write the disk
	// could not complete (a medium error on a write) takes the disk out at
	// once, without a retry, and an illegal command is retried like any
	// other failed command instead of failing the disk.
	StrictWrites
)

// TransientPolicy is the transient-error policy knob.
type TransientPolicy struct {
	Kind   PolicyKind
	Count  int           // Threshold only: errors that fail a disk ...
	Period time.Duration // ... when they fall within this sliding window
}

func (p TransientPolicy) String() string {
	switch p.Kind {
	case Paranoid:
		return "paranoid"
	case Tolerant:
		return "tolerant"
	case Threshold:
		return fmt.Sprintf("threshold(%d, %s)", p.Count, p.Period)
	case StrictWrites:
		return "strict-writes"
	}
	return "invalid"
}

// ParseTransientPolicy parses "paranoid", "tolerant", "strict-writes" or "threshold(N, PERIOD)"
// with PERIOD a Go duration, e.g. "threshold(3, 10m)".
func ParseTransientPolicy(s string) (TransientPolicy, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "paranoid":
		return TransientPolicy{Kind: Paranoid}, nil
	case "tolerant":
		return TransientPolicy{Kind: Tolerant}, nil
	case "strict-writes":
		return TransientPolicy{Kind: StrictWrites}, nil
	}
	args, ok := strings.CutPrefix(s, "threshold(")
	if ok {
		args, ok = strings.CutSuffix(args, ")")
	}
	if !ok {
		return TransientPolicy{}, fmt.Errorf("transient_policy %q: want paranoid, tolerant, strict-writes or threshold(N, PERIOD)", s)
	}
	n, period, ok := strings.Cut(args, ",")
	if !ok {
		return TransientPolicy{}, fmt.Errorf("transient_policy %q: threshold needs a count and a period, e.g. threshold(3, 10m)", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return TransientPolicy{}, fmt.Errorf("transient_policy %q: count must be a positive integer", s)
	}
	d, err := time.ParseDuration(strings.TrimSpace(period))
	if err != nil || d <= 0 {
		return TransientPolicy{}, fmt.Errorf("transient_policy %q: period must be a positive Go duration like 10m", s)
	}
	return TransientPolicy{Kind: Threshold, Count: count, Period: d}, nil
}

// Priority is how a reconstruction shares the disks with the foreground load.
type Priority int

// Reconstruction priorities (Brown and Patterson 2000, §4.2).
const (
	// Low rebuilds at LowRate whatever the load: the application barely
	// notices, and the window of vulnerability is long (Linux).
	Low Priority = iota + 1
	// High rebuilds as fast as the disks allow, competing with the
	// foreground load (Solaris).
	High
	// Adaptive rebuilds at MaxRate scaled by the idle fraction of the
	// foreground load, never below LowRate: fast when the load is light
	// (Windows).
	Adaptive
	// Fixed rebuilds at Rate.
	Fixed
)

// Reconstruction is the reconstruction policy knob.
type Reconstruction struct {
	Auto     bool // start onto a hot spare as soon as a disk is taken out of service
	Priority Priority
	Rate     int64 // Fixed: bytes per second per disk
	LowRate  int64 // Low, and Adaptive's floor: bytes per second per disk
	MaxRate  int64 // Adaptive's ceiling: bytes per second per disk
}

// Default rates, after Linux md's speed_limit_min and speed_limit_max.
const (
	DefaultLowRate = 2 * MB
	DefaultMaxRate = 200 * MB
	// MB is the unit of rates: 10^6 bytes.
	MB = 1000 * 1000
)

func (r Reconstruction) String() string {
	auto := "manual"
	if r.Auto {
		auto = "auto"
	}
	switch r.Priority {
	case Low:
		return auto + ", low"
	case High:
		return auto + ", high"
	case Adaptive:
		return auto + ", adaptive"
	case Fixed:
		return fmt.Sprintf("%s, %s", auto, FormatRate(r.Rate))
	}
	return auto + ", invalid"
}

// ParsePriority parses "low", "high", "adaptive" or a rate like "20MB/s"
// into r's Priority (and Rate).
func (r *Reconstruction) ParsePriority(s string) error {
	switch strings.TrimSpace(s) {
	case "low":
		r.Priority = Low
	case "high":
		r.Priority = High
	case "adaptive":
		r.Priority = Adaptive
	default:
		rate, err := ParseRate(s)
		if err != nil {
			return fmt.Errorf("reconstruction %q: want low, high, adaptive or a rate like 20MB/s", s)
		}
		r.Priority, r.Rate = Fixed, rate
	}
	return nil
}

// ParseRate parses a rate in bytes per second: "512KB/s", "20MB/s", "1GB/s"
// (powers of 1000), or a bare number of MB/s.
func ParseRate(s string) (int64, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "/s")
	mult := float64(MB)
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = v, u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("bad rate %q", s)
	}
	return int64(v * mult), nil
}

// FormatRate renders bytes per second as ParseRate reads it.
func FormatRate(bps int64) string {
	return strconv.FormatFloat(float64(bps)/MB, 'f', -1, 64) + "MB/s"
}

// Unlimited is the rate Rate returns for High.
const Unlimited = -1

// RateFor returns the bytes per second per disk that a reconstruction may
// use when the foreground load keeps the array busy a fraction util (0..1)
// of the time, or Unlimited.
func (r Reconstruction) RateFor(util float64) int64 {
	util = min(max(util, 0), 1)
	switch r.Priority {
	case Low:
		return r.LowRate
	case Adaptive:
		return max(r.LowRate, int64(float64(r.MaxRate)*(1-util)))
	case Fixed:
		return r.Rate
	}
	return Unlimited
}

// Config describes an array. Validate it (New does) before use.
type Config struct {
	Disks     int   // active disks, at least MinDisks
	Spares    int   // hot spares
	ChunkSize int   // bytes per chunk, a multiple of BlockSize
	DiskSize  int64 // bytes per disk; only whole chunks are used
	Policy    TransientPolicy
	Recon     Reconstruction
	// DoubleFailure is what a second lost member does; the zero value,
	// Recoverable, refuses I/O until forced.
	DoubleFailure DoubleFailure
	// Now is the clock of the threshold policy and of events; nil means time.Now.
	Now func() time.Time
	// OnEvent receives every state change. It is called with the array's
	// state lock held, so it must not block and must not call the Array.
	OnEvent func(Event)
	// FaultIDBase is where fault ids start: Inject numbers them
	// FaultIDBase+1, +2, ... A node draws it per process, so that an id
	// kept from before a restart names no fault of the restarted node.
	FaultIDBase int
}

// DefaultConfig is the paper's array (Brown and Patterson 2000, §3.2): 4 active disks, one
// spare, 32 KiB chunks, with a threshold policy and adaptive automatic
// reconstruction.
func DefaultConfig() Config {
	return Config{
		Disks: 4, Spares: 1, ChunkSize: 32 * 1024, DiskSize: 64 << 20,
		Policy: TransientPolicy{Kind: Threshold, Count: 3, Period: 10 * time.Minute},
		Recon:  Reconstruction{Auto: true, Priority: Adaptive, LowRate: DefaultLowRate, MaxRate: DefaultMaxRate},
	}
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.Disks < MinDisks || c.Disks > MaxDisks {
		errs = append(errs, fmt.Errorf("disks: %d active disks; RAID-5 needs %d to %d", c.Disks, MinDisks, MaxDisks))
	}
	if c.FaultIDBase < 0 {
		errs = append(errs, fmt.Errorf("fault id base %d: want 0 or more", c.FaultIDBase))
	}
	if c.Spares < 0 || c.Spares > MaxDisks {
		errs = append(errs, fmt.Errorf("spares: %d; want 0 to %d", c.Spares, MaxDisks))
	}
	if c.ChunkSize < BlockSize || c.ChunkSize%BlockSize != 0 || c.ChunkSize > 16<<20 {
		errs = append(errs, fmt.Errorf("chunk: %d bytes; want a multiple of %d up to 16 MiB", c.ChunkSize, BlockSize))
	} else if c.DiskSize < int64(c.ChunkSize) {
		errs = append(errs, fmt.Errorf("disk_size: %d bytes is less than one chunk (%d)", c.DiskSize, c.ChunkSize))
	}
	switch c.Policy.Kind {
	case Paranoid, Tolerant, StrictWrites:
	case Threshold:
		if c.Policy.Count < 1 || c.Policy.Period <= 0 {
			errs = append(errs, fmt.Errorf("transient_policy: threshold needs a positive count and period"))
		}
	default:
		errs = append(errs, fmt.Errorf("transient_policy: not set"))
	}
	if _, ok := doubleFailureNames[c.DoubleFailure]; !ok {
		errs = append(errs, fmt.Errorf("double_failure: %d is not a behaviour", c.DoubleFailure))
	}
	switch c.Recon.Priority {
	case High:
	case Low, Adaptive:
		if c.Recon.LowRate <= 0 || (c.Recon.Priority == Adaptive && c.Recon.MaxRate < c.Recon.LowRate) {
			errs = append(errs, fmt.Errorf("reconstruction: low rate must be positive and max rate at least the low rate"))
		}
	case Fixed:
		if c.Recon.Rate <= 0 {
			errs = append(errs, fmt.Errorf("reconstruction: rate must be positive"))
		}
	default:
		errs = append(errs, fmt.Errorf("reconstruction: priority not set"))
	}
	return errors.Join(errs...)
}
