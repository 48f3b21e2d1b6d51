package raid

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/systems/raid/array"
)

// Settings are the raid node's knobs, read from node.Config.Options.
type Settings struct {
	Array        array.Config
	PolicySet    string        // policy_set: the set applied before the other knobs, or ""
	DiskSizeSet  bool          // disk_size given; else sized to fit the page set and log
	IOOverhead   time.Duration // io_overhead: added to every disk command
	IOTimeout    time.Duration // io_timeout: command timeout; 0 = a hung disk hangs the I/O for ever
	LogSize      int64         // log_size: bytes of the access-log region on the volume
	ControlToken string        // control_token: required by /control/*; empty disables the API
	EventsPath   string        // events: file for the JSON-lines event log ("" = DIR/raid-events.jsonl, "-" = stdout)
	MaxRequests  int           // max_requests: volume requests at work at once; 0 = no admission control
	MaxQueued    int           // max_queued: requests waiting for a turn; beyond them, 503 at once
	QueueWait    time.Duration // queue_wait: how long a request may wait for a turn before its 503
	Pages        int
	PageSize     int
}

// optionKeys documents every option; unknown keys are errors.
var optionKeys = map[string]string{
	"disks":                   "active disks (default 4, at least 3)",
	"spares":                  "hot spares (default 1)",
	"chunk":                   "chunk size, e.g. 32KiB (default; a multiple of 4KiB)",
	"disk_size":               "bytes per disk, e.g. 256MiB (default: enough for the page set and log)",
	"io_overhead":             "added to every disk command, e.g. 510us (default 0)",
	"io_timeout":              "disk command timeout (default 2s; 0 waits for ever)",
	"policy_set":              "linux | solaris | windows2000: the knobs of the system it emulates; transient_policy, reconstruction, reconstruction_auto and double_failure given beside it override it",
	"transient_policy":        "paranoid | tolerant | strict-writes | threshold(N, PERIOD) (default threshold(3, 10m))",
	"double_failure":          "recoverable | unrecoverable | keep-serving: a second lost member (default recoverable)",
	"reconstruction":          "low | high | adaptive | RATE like 20MB/s (default adaptive)",
	"reconstruction_auto":     "true | false: rebuild onto a spare at once (default true)",
	"reconstruction_low_rate": "low priority rate and adaptive floor (default 2MB/s)",
	"reconstruction_max_rate": "adaptive ceiling (default 200MB/s)",
	"log_size":                "access-log region on the volume (default 4MiB)",
	"control_token":           "bearer token of the control API (default: $FAULTBENCH_RAID_TOKEN; required to use it)",
	"events":                  "event log file (default DIR/raid-events.jsonl; - for stdout)",
	"max_requests":            "page and log requests at work on the volume at once (default 128; 0: no limit, no queue)",
	"max_queued":              "requests waiting for a turn; one more is refused with 503 at once (default 1024)",
	"queue_wait":              "longest wait for a turn before a 503 (default 1s)",
}

// ParseSettings reads cfg into Settings, reporting every bad option.
func ParseSettings(cfg node.Config) (Settings, error) {
	s := Settings{Array: array.DefaultConfig(), IOTimeout: 2 * time.Second, LogSize: 4 << 20,
		MaxRequests: DefaultMaxRequests, MaxQueued: DefaultMaxQueued, QueueWait: DefaultQueueWait,
		Pages: cfg.Pages, PageSize: cfg.PageSize}
	if s.Pages <= 0 {
		s.Pages = node.DefaultPages
	}
	if s.PageSize <= 0 {
		s.PageSize = node.DefaultPageSize
	}
	var errs []error
	bad := func(key string, err error) { errs = append(errs, fmt.Errorf("option %s: %w", key, err)) }
	// The set first, whatever the keys' order, so that the knobs given
	// beside it override its.
	if v, ok := cfg.Options["policy_set"]; ok {
		set, err := array.LookupPolicySet(v)
		if err != nil {
			bad("policy_set", err)
		}
		set.Apply(&s.Array)
		s.PolicySet = set.Name
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Options)) {
		v := strings.TrimSpace(cfg.Options[k])
		var err error
		switch k {
		case "disks":
			s.Array.Disks, err = strconv.Atoi(v)
		case "spares":
			s.Array.Spares, err = strconv.Atoi(v)
		case "chunk":
			var n int64
			n, err = ParseSize(v)
			s.Array.ChunkSize = int(min(n, 1<<30))
		case "disk_size":
			s.Array.DiskSize, err = ParseSize(v)
			s.DiskSizeSet = true
		case "io_overhead":
			s.IOOverhead, err = parseDuration(v)
		case "io_timeout":
			s.IOTimeout, err = parseDuration(v)
		case "policy_set": // applied above
		case "transient_policy":
			s.Array.Policy, err = array.ParseTransientPolicy(v)
			if _, setErr := array.LookupPolicySet(v); err != nil && setErr == nil {
				err = fmt.Errorf("%w (%s is a policy set: give policy_set=%s)", err, v, v)
			}
		case "double_failure":
			s.Array.DoubleFailure, err = array.ParseDoubleFailure(v)
		case "reconstruction":
			err = s.Array.Recon.ParsePriority(v)
		case "reconstruction_auto":
			s.Array.Recon.Auto, err = strconv.ParseBool(v)
		case "reconstruction_low_rate":
			s.Array.Recon.LowRate, err = array.ParseRate(v)
		case "reconstruction_max_rate":
			s.Array.Recon.MaxRate, err = array.ParseRate(v)
		case "log_size":
			s.LogSize, err = ParseSize(v)
		case "control_token":
			s.ControlToken = v
		case "events":
			s.EventsPath = v
		case "max_requests":
			s.MaxRequests, err = parseCount(v, 1<<20)
		case "max_queued":
			s.MaxQueued, err = parseCount(v, 1<<20)
		case "queue_wait":
			s.QueueWait, err = parseDuration(v)
		default:
			err = fmt.Errorf("unknown option (known: %s)", strings.Join(slices.Sorted(maps.Keys(optionKeys)), ", "))
		}
		if err != nil {
			bad(k, err)
		}
	}
	if s.ControlToken == "" {
		// faultbench run hands the token over in the environment, out of argv.
		s.ControlToken = os.Getenv(TokenEnv)
	}
	if s.LogSize < array.BlockSize || s.LogSize%array.BlockSize != 0 {
		bad("log_size", fmt.Errorf("%d bytes: want a positive multiple of %d", s.LogSize, array.BlockSize))
	}
	if !s.DiskSizeSet && s.Array.Disks >= array.MinDisks && s.Array.ChunkSize >= array.BlockSize {
		s.Array.DiskSize = s.neededDiskSize()
	}
	if err := s.Array.Validate(); err != nil {
		errs = append(errs, err)
	} else if s.DiskSizeSet && s.Array.DiskSize < s.neededDiskSize() {
		bad("disk_size", fmt.Errorf("%d bytes per disk cannot hold %d pages of %d bytes and the log: need %d", s.Array.DiskSize, s.Pages, s.PageSize, s.neededDiskSize()))
	}
	return s, errors.Join(errs...)
}

// Admission defaults (see admission). 128 requests keep every disk of the
// largest array busy (a page read is one or two disk commands) and take the
// micro-benchmark array ~0.1 s to serve (~1,600 pages/s measured at
// saturation); a 1 s wait rides out a second-long stall of a shared
// machine without a 503, and still answers — page or 503 — well within
// the clients' 6 s. However many arrive, the node holds at most
// 128 + 1,024 requests' sockets.
const (
	DefaultMaxRequests = 128
	DefaultMaxQueued   = 1024
	DefaultQueueWait   = time.Second
)

// parseCount parses a count from 0 to most.
func parseCount(s string, most int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > most {
		return 0, fmt.Errorf("bad count %q (want 0 to %d)", s, most)
	}
	return n, nil
}

// neededDiskSize is the per-disk size that holds the page set and the log.
func (s Settings) neededDiskSize() int64 {
	need := int64(s.Pages)*slotSize(s.PageSize) + s.LogSize
	perDisk := (need + int64(s.Array.Disks-2)) / int64(s.Array.Disks-1)
	chunk := int64(s.Array.ChunkSize)
	return (perDisk + chunk - 1) / chunk * chunk
}

// ParseSize parses a byte count: 4096, 32k, 32KiB, 256MiB, 1GiB (powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"k", 1 << 10}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("bad size %q (want e.g. 32KiB, 256MiB)", s)
	}
	return n * mult, nil
}

func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q (want e.g. 2s, 510us)", s)
	}
	return d, nil
}
