// Package pinpoint detects misbehaving SSM bricks from their vital
// statistics and has them restarted (Ling, Kiciman and Fox 2004, §4): "most of the system is
// behaving correctly most of the time", so a brick that deviates from its
// peers is suspect, and restarting a brick is so cheap that a false alarm
// costs little.
//
// Detector is the whole decision procedure as a pure, deterministic state
// machine: feed it one Sample per brick per second (Observe) and call Tick;
// it returns Decisions with their evidence. Time is an argument (the run's
// clock), nothing is random, and the same input gives the same decisions.
// Monitor is the thin loop that polls the bricks' /stats endpoints, feeds a
// Detector and carries out its decisions through a Restarter.
//
// Activity statistics (NumDropped, NumReads, NumWrites: per-second rates) are
// compared across bricks with the median absolute deviation, over a short
// moving average. State statistics (NumElements, MemoryUsed, InboxSize) are
// compared by pattern, after Tarzan: each brick's recent series is
// discretised into a binary string and the frequency of every substring up
// to length k is compared across bricks, again with the MAD. A brick with
// Anomalies (3) or more deviant statistics at once is restarted; a brick
// that sends nothing for DeadAfter is restarted too (§5.5, "stopped sending
// heartbeats"). A brick restarted RestartLimit times within RestartPeriod is
// taken offline instead: restarting does not cure a persistent fault.
package pinpoint

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Stat names one vital statistic of a brick (Ling, Kiciman and Fox 2004, Table 3).
type Stat int

// The statistics, in Sample order.
const (
	NumElements Stat = iota // objects stored (state)
	MemoryUsed              // memory used (state)
	InboxSize               // requests queued (state)
	NumDropped              // requests dropped in the last second (activity)
	NumReads                // reads processed in the last second (activity)
	NumWrites               // writes processed in the last second (activity)
	numStats
)

var statNames = [numStats]string{"NumElements", "MemoryUsed", "InboxSize", "NumDropped", "NumReads", "NumWrites"}

func (s Stat) String() string {
	if s >= 0 && s < numStats {
		return statNames[s]
	}
	return fmt.Sprintf("Stat(%d)", int(s))
}

// Activity reports whether s is a rate (compared by MAD) rather than a state
// (compared by pattern).
func (s Stat) Activity() bool { return s >= NumDropped }

// Sample is one second of a brick's statistics, indexed by Stat.
type Sample [numStats]float64

// Config tunes the Detector. Zero fields take DefaultConfig's values.
type Config struct {
	ActivityWindow int     // samples averaged per activity statistic; default 5
	MADThreshold   float64 // activity deviant when |x−median| > k·spread; default 3
	MinSpread      float64 // spread floor, per second (a quiet population has MAD 0); default 5
	RelSpread      float64 // spread floor as a fraction of |median|; default 0.15

	History         int     // state series length; default 30 samples
	MinHistory      int     // samples before a state series is compared; default 12
	SubstringLen    int     // Tarzan substrings of length 1..k; default 4
	TarzanThreshold float64 // state deviant when a frequency is > k·spread off the median; default 3
	MinFreqSpread   float64 // frequency spread floor; default 0.15

	Anomalies     int           // deviant statistics that restart a brick; default 3
	MinPeers      int           // bricks needed to compare at all; default 3
	DeadAfter     time.Duration // silence that restarts a brick; default 3s
	Grace         time.Duration // after a restart the brick is not judged; default 5s
	RestartLimit  int           // restarts within RestartPeriod before offline; default 3
	RestartPeriod time.Duration // default 10m
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		ActivityWindow: 5, MADThreshold: 3, MinSpread: 5, RelSpread: 0.15,
		History: 30, MinHistory: 12, SubstringLen: 4, TarzanThreshold: 3, MinFreqSpread: 0.15,
		Anomalies: 3, MinPeers: 3, DeadAfter: 3 * time.Second, Grace: 5 * time.Second,
		RestartLimit: 3, RestartPeriod: 10 * time.Minute,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	fill := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	fillF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	fillD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	fill(&c.ActivityWindow, d.ActivityWindow)
	fillF(&c.MADThreshold, d.MADThreshold)
	fillF(&c.MinSpread, d.MinSpread)
	fillF(&c.RelSpread, d.RelSpread)
	fill(&c.History, d.History)
	fill(&c.MinHistory, d.MinHistory)
	fill(&c.SubstringLen, d.SubstringLen)
	fillF(&c.TarzanThreshold, d.TarzanThreshold)
	fillF(&c.MinFreqSpread, d.MinFreqSpread)
	fill(&c.Anomalies, d.Anomalies)
	fill(&c.MinPeers, d.MinPeers)
	fillD(&c.DeadAfter, d.DeadAfter)
	fillD(&c.Grace, d.Grace)
	fill(&c.RestartLimit, d.RestartLimit)
	fillD(&c.RestartPeriod, d.RestartPeriod)
	return c
}

// ErrConfig wraps every validation failure.
var ErrConfig = errors.New("pinpoint: bad config")

// Validate reports an impossible setting (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.ActivityWindow < 1 || c.History < 2 || c.MinHistory < 2 || c.MinHistory > c.History:
		return bad("need activity_window >= 1 and 2 <= min_history (%d) <= history (%d)", c.MinHistory, c.History)
	case c.SubstringLen < 1 || c.SubstringLen > 8:
		return bad("substring length %d must be in [1, 8]", c.SubstringLen)
	case c.Anomalies < 1 || c.Anomalies > int(numStats):
		return bad("anomalies %d must be in [1, %d]", c.Anomalies, numStats)
	case c.MinPeers < 2:
		return bad("min_peers %d: comparing needs at least 2 bricks", c.MinPeers)
	case c.MADThreshold < 0 || c.TarzanThreshold < 0 || c.MinSpread < 0 || c.RelSpread < 0 || c.MinFreqSpread < 0:
		return bad("thresholds and spreads must not be negative")
	case c.DeadAfter < 0 || c.Grace < 0 || c.RestartPeriod < 0 || c.RestartLimit < 1:
		return bad("durations must not be negative and restart_limit must be at least 1")
	}
	return nil
}

// Action is what a Decision asks for.
type Action string

// Actions.
const (
	Suspect Action = "suspect" // some statistics deviate, fewer than Anomalies: no action, for the record
	Restart Action = "restart" // restart the brick
	Offline Action = "offline" // too many restarts: take the brick out of service and tell an operator
)

// Evidence is one deviant statistic behind a Decision.
type Evidence struct {
	Stat    string  `json:"stat"`              // a Stat name, or "heartbeat"
	Test    string  `json:"test"`              // "mad", "tarzan" or "silent"
	Value   float64 `json:"value"`             // the brick's value (rate, substring frequency, or seconds silent)
	Median  float64 `json:"median"`            // the peers' median
	Spread  float64 `json:"spread"`            // the spread used (scaled MAD or its floor)
	Score   float64 `json:"score"`             // |value − median| / spread
	Pattern string  `json:"pattern,omitempty"` // tarzan: the substring
}

func (e Evidence) String() string {
	switch e.Test {
	case "silent":
		return fmt.Sprintf("no statistics for %.1fs", e.Value)
	case "tarzan":
		return fmt.Sprintf("%s pattern %q frequency %.2f vs median %.2f (score %.1f)", e.Stat, e.Pattern, e.Value, e.Median, e.Score)
	}
	return fmt.Sprintf("%s %.1f/s vs median %.1f/s (score %.1f)", e.Stat, e.Value, e.Median, e.Score)
}

// Decision is one judgement on one brick, with its evidence.
type Decision struct {
	At       time.Duration `json:"at"`
	Node     int           `json:"node"`
	Action   Action        `json:"action"`
	Evidence []Evidence    `json:"evidence"`
	Restarts int           `json:"restarts"` // restarts within RestartPeriod, this one included
}

// Detail is a one-line summary for an events.jsonl detail field.
func (d Decision) Detail() string {
	parts := make([]string, len(d.Evidence))
	for i, e := range d.Evidence {
		parts[i] = e.String()
	}
	return fmt.Sprintf("%s brick %d (%d restarts in period): %s", d.Action, d.Node, d.Restarts, strings.Join(parts, "; "))
}

type brickHist struct {
	node       int
	samples    []Sample // oldest first, at most History
	lastSeen   time.Duration
	graceUntil time.Duration
	restarts   []time.Duration
	offline    bool
	suspect    string // last reported suspect set, to report changes only
}

// Detector is not safe for concurrent use.
type Detector struct {
	cfg    Config
	bricks map[int]*brickHist
	order  []int
}

// NewDetector returns a detector watching no brick yet.
func NewDetector(cfg Config) (*Detector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Detector{cfg: cfg.withDefaults(), bricks: map[int]*brickHist{}}, nil
}

// Watch starts expecting samples from node at time at (silence counts from
// here). Observe watches a node implicitly.
func (d *Detector) Watch(node int, at time.Duration) {
	if d.bricks[node] != nil {
		return
	}
	d.bricks[node] = &brickHist{node: node, lastSeen: at}
	d.order = append(d.order, node)
	slices.Sort(d.order)
}

// Observe records node's statistics for the second ending at at.
func (d *Detector) Observe(node int, at time.Duration, s Sample) {
	d.Watch(node, at)
	b := d.bricks[node]
	if b.offline {
		return
	}
	b.lastSeen = at
	b.samples = append(b.samples, s)
	if len(b.samples) > d.cfg.History {
		b.samples = b.samples[len(b.samples)-d.cfg.History:]
	}
}

// Offline reports whether node has been taken offline.
func (d *Detector) Offline(node int) bool {
	b := d.bricks[node]
	return b != nil && b.offline
}

// Tick judges every watched brick at time at and returns the decisions,
// in node order. A Restart or Offline decision is taken as carried out: the
// brick's history is cleared and it is not judged again for Grace.
func (d *Detector) Tick(at time.Duration) []Decision {
	var out []Decision
	evidence := map[int][]Evidence{}
	var judged []*brickHist
	for _, n := range d.order {
		b := d.bricks[n]
		if b.offline || at < b.graceUntil {
			continue
		}
		if silent := at - b.lastSeen; silent > d.cfg.DeadAfter {
			evidence[n] = []Evidence{{Stat: "heartbeat", Test: "silent", Value: silent.Seconds(), Score: math.Inf(1)}}
			continue
		}
		judged = append(judged, b)
	}
	if len(judged) >= d.cfg.MinPeers {
		for st := Stat(0); st < numStats; st++ {
			if st.Activity() {
				d.judgeActivity(st, judged, evidence)
			} else {
				d.judgeState(st, judged, evidence)
			}
		}
	}
	for _, n := range d.order {
		ev := evidence[n]
		b := d.bricks[n]
		silent := len(ev) == 1 && ev[0].Test == "silent"
		switch {
		case silent || len(ev) >= d.cfg.Anomalies:
			out = append(out, d.act(b, at, ev))
		case len(ev) > 0:
			key := evidenceKey(ev)
			if key != b.suspect {
				b.suspect = key
				out = append(out, Decision{At: at, Node: n, Action: Suspect, Evidence: ev, Restarts: d.recentRestarts(b, at)})
			}
		default:
			b.suspect = ""
		}
	}
	return out
}

func evidenceKey(ev []Evidence) string {
	names := make([]string, len(ev))
	for i, e := range ev {
		names[i] = e.Stat
	}
	return strings.Join(names, ",")
}

func (d *Detector) recentRestarts(b *brickHist, at time.Duration) int {
	b.restarts = slices.DeleteFunc(b.restarts, func(t time.Duration) bool { return at-t > d.cfg.RestartPeriod })
	return len(b.restarts)
}

func (d *Detector) act(b *brickHist, at time.Duration, ev []Evidence) Decision {
	n := d.recentRestarts(b, at)
	b.samples = nil
	b.suspect = ""
	b.lastSeen = at
	b.graceUntil = at + d.cfg.Grace
	if n >= d.cfg.RestartLimit {
		b.offline = true
		return Decision{At: at, Node: b.node, Action: Offline, Evidence: ev, Restarts: n}
	}
	b.restarts = append(b.restarts, at)
	return Decision{At: at, Node: b.node, Action: Restart, Evidence: ev, Restarts: n + 1}
}

func (d *Detector) judgeActivity(st Stat, judged []*brickHist, evidence map[int][]Evidence) {
	var nodes []int
	var xs []float64
	for _, b := range judged {
		if len(b.samples) < d.cfg.ActivityWindow {
			continue
		}
		sum := 0.0
		for _, s := range b.samples[len(b.samples)-d.cfg.ActivityWindow:] {
			sum += s[st]
		}
		nodes = append(nodes, b.node)
		xs = append(xs, sum/float64(d.cfg.ActivityWindow))
	}
	if len(xs) < d.cfg.MinPeers {
		return
	}
	med, dev := mad(xs)
	spread := max(madScale*dev, d.cfg.MinSpread, d.cfg.RelSpread*math.Abs(med))
	for i, x := range xs {
		if score := math.Abs(x-med) / spread; score > d.cfg.MADThreshold {
			evidence[nodes[i]] = append(evidence[nodes[i]], Evidence{Stat: st.String(), Test: "mad", Value: x, Median: med, Spread: spread, Score: score})
		}
	}
}

func (d *Detector) judgeState(st Stat, judged []*brickHist, evidence map[int][]Evidence) {
	var nodes []int
	var freqs [][]float64
	for _, b := range judged {
		if len(b.samples) < d.cfg.MinHistory {
			continue
		}
		series := make([]float64, len(b.samples))
		for i, s := range b.samples {
			series[i] = s[st]
		}
		nodes = append(nodes, b.node)
		freqs = append(freqs, substringFreqs(discretise(series), d.cfg.SubstringLen))
	}
	if len(nodes) < d.cfg.MinPeers {
		return
	}
	best := make([]Evidence, len(nodes))
	col := make([]float64, len(nodes))
	for j := range freqs[0] {
		for i := range nodes {
			col[i] = freqs[i][j]
		}
		med, dev := mad(col)
		spread := max(madScale*dev, d.cfg.MinFreqSpread)
		for i, f := range col {
			score := math.Abs(f-med) / spread
			if score > best[i].Score {
				best[i] = Evidence{Stat: st.String(), Test: "tarzan", Value: f, Median: med, Spread: spread, Score: score, Pattern: substringName(j)}
			}
		}
	}
	for i, e := range best {
		if e.Score > d.cfg.TarzanThreshold {
			evidence[nodes[i]] = append(evidence[nodes[i]], e)
		}
	}
}
