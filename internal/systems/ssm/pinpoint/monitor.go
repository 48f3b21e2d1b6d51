package pinpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// Restarter restarts a brick: kill its process and start it again (empty,
// as SSM bricks are meant to be). The lead connects it to the testbed. It is
// called from a goroutine of the Monitor, one call per node at a time, and
// may block until the brick runs again.
type Restarter interface {
	Restart(node int) error
}

// RestarterFunc adapts a function to Restarter.
type RestarterFunc func(node int) error

// Restart calls f.
func (f RestarterFunc) Restart(node int) error { return f(node) }

// Stopper is an optional capability of a Restarter: when a brick goes
// offline the Monitor stops it for good (otherwise it is only no longer
// restarted).
type Stopper interface {
	Stop(node int) error
}

// Event is what the Monitor reports: every Decision, and the outcome of
// carrying it out. Kinds:
//
//	system.pinpoint.suspect         statistics deviate, below the restart threshold
//	system.pinpoint.restart         restarting the brick (Evidence says why)
//	system.pinpoint.restart_failed  the Restarter returned an error (Detail)
//	system.pinpoint.offline         too many restarts: brick taken offline, operator notified
type Event struct {
	At       time.Duration // on the Monitor's clock
	Kind     string
	Node     int
	Detail   string
	Evidence []Evidence
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Bricks maps node number → the brick's address (host:port); the
	// Monitor polls http://ADDR/stats. Use the brick's own address, not a
	// faultnet proxy: statistics are management traffic.
	Bricks    map[int]string
	Interval  time.Duration // default 1s
	Detector  Config
	Restarter Restarter // required
	// OnEvent receives every event, from the Monitor's goroutines; it must
	// be safe for concurrent use and must not block.
	OnEvent func(Event)
	// Clock is the run's clock (e.g. time since the run started); default:
	// time since Run was called.
	Clock  func() time.Duration
	Client *http.Client // default: a client with a timeout of Interval/2
}

// Monitor polls brick statistics once per Interval and acts on the
// Detector's decisions.
type Monitor struct {
	cfg  MonitorConfig
	det  *Detector
	prev map[int]brick.Stats
	mu   sync.Mutex
	busy map[int]bool // a restart is running
	wg   sync.WaitGroup
}

// NewMonitor validates cfg.
func NewMonitor(cfg MonitorConfig) (*Monitor, error) {
	if len(cfg.Bricks) == 0 {
		return nil, fmt.Errorf("%w: no bricks to monitor", ErrConfig)
	}
	if cfg.Restarter == nil {
		return nil, fmt.Errorf("%w: a Restarter is required", ErrConfig)
	}
	for n, addr := range cfg.Bricks {
		host, _, err := net.SplitHostPort(addr)
		ip := net.ParseIP(host)
		if err != nil || host != "localhost" && (ip == nil || !(ip.IsLoopback() || ip.IsPrivate())) {
			return nil, fmt.Errorf("%w: brick %d address %q must be host:port with a loopback or private IP", ErrConfig, n, addr)
		}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Interval / 2}
	}
	det, err := NewDetector(cfg.Detector)
	if err != nil {
		return nil, err
	}
	return &Monitor{cfg: cfg, det: det, prev: map[int]brick.Stats{}, busy: map[int]bool{}}, nil
}

// Run polls until ctx ends, then waits for restarts in progress and
// returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	start := time.Now()
	clock := m.cfg.Clock
	if clock == nil {
		clock = func() time.Duration { return time.Since(start) }
	}
	nodes := make([]int, 0, len(m.cfg.Bricks))
	for n := range m.cfg.Bricks {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		m.det.Watch(n, clock())
	}
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.wg.Wait()
			return nil
		case <-t.C:
		}
		stats := m.poll(ctx, nodes)
		now := clock()
		for _, n := range nodes {
			if s, ok := stats[n]; ok {
				if sample, ok := m.sample(n, s); ok {
					m.det.Observe(n, now, sample)
				}
			}
		}
		for _, d := range m.det.Tick(now) {
			m.carryOut(d)
		}
	}
}

// poll fetches every brick's /stats concurrently; failures are absent.
func (m *Monitor) poll(ctx context.Context, nodes []int) map[int]brick.Stats {
	var mu sync.Mutex
	out := map[int]brick.Stats{}
	var wg sync.WaitGroup
	for _, n := range nodes {
		m.mu.Lock()
		busy := m.busy[n]
		m.mu.Unlock()
		if busy || m.det.Offline(n) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := fetchStats(ctx, m.cfg.Client, m.cfg.Bricks[n])
			if err == nil {
				mu.Lock()
				out[n] = s
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

func fetchStats(ctx context.Context, c *http.Client, addr string) (brick.Stats, error) {
	var s brick.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET /stats: %s", resp.Status)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// sample turns cumulative counters into per-second rates against the
// previous poll of the same incarnation; the first poll of an incarnation
// gives no sample.
func (m *Monitor) sample(n int, s brick.Stats) (Sample, bool) {
	prev, ok := m.prev[n]
	m.prev[n] = s
	if !ok || prev.Incarnation != s.Incarnation || s.UnixMillis <= prev.UnixMillis {
		return Sample{}, false
	}
	secs := float64(s.UnixMillis-prev.UnixMillis) / 1000
	rate := func(cur, old uint64) float64 {
		if cur < old {
			return 0
		}
		return float64(cur-old) / secs
	}
	var out Sample
	out[NumElements] = float64(s.NumElements)
	out[MemoryUsed] = float64(s.MemoryUsed)
	out[InboxSize] = float64(s.InboxSize)
	out[NumDropped] = rate(s.NumDropped, prev.NumDropped)
	out[NumReads] = rate(s.NumReads, prev.NumReads)
	out[NumWrites] = rate(s.NumWrites, prev.NumWrites)
	return out, true
}

func (m *Monitor) emit(e Event) {
	if m.cfg.OnEvent != nil {
		m.cfg.OnEvent(e)
	}
}

func (m *Monitor) carryOut(d Decision) {
	kind := "system.pinpoint." + string(d.Action)
	m.emit(Event{At: d.At, Kind: kind, Node: d.Node, Detail: d.Detail(), Evidence: d.Evidence})
	switch d.Action {
	case Restart:
		m.mu.Lock()
		if m.busy[d.Node] {
			m.mu.Unlock()
			return
		}
		m.busy[d.Node] = true
		m.mu.Unlock()
		delete(m.prev, d.Node)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			err := m.cfg.Restarter.Restart(d.Node)
			m.mu.Lock()
			delete(m.busy, d.Node)
			m.mu.Unlock()
			if err != nil {
				m.emit(Event{At: d.At, Kind: "system.pinpoint.restart_failed", Node: d.Node, Detail: err.Error()})
			}
		}()
	case Offline:
		if s, ok := m.cfg.Restarter.(Stopper); ok {
			if err := s.Stop(d.Node); err != nil {
				m.emit(Event{At: d.At, Kind: "system.pinpoint.restart_failed", Node: d.Node, Detail: errors.Join(errors.New("stop"), err).Error()})
			}
		}
	}
}
