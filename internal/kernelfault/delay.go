package kernelfault

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Packet delay and flaky links without netem: an iptables rule in a
// node's namespace (the kernel's NFQUEUE target, through iptables-nft's
// xtables compatibility, since this kernel has no nft queue expression)
// hands the node's outgoing packets on the faulted link to a queue; a
// Delayer in userspace holds each packet's verdict for the delay and then
// accepts it (delay), or drops the packets of the link's down periods
// (link-flaky). The rule has --queue-bypass and the queue fail-open, so a
// delayer that is gone or overwhelmed lets packets pass undelayed instead
// of cutting the link: a fault that fails open is visible in its evidence,
// one that fails closed would be a different fault.

// QueueSpec says what a Delayer does to which packets.
type QueueSpec struct {
	NS    string   // network namespace: a name under /run/netns, a path (/proc/PID/ns/net), or "" for this one
	Queue uint16   // NFQUEUE number, unique within the namespace
	Match []string // iptables match of the node's outgoing packets, e.g. -o eth0 or -d ADDR,ADDR
	// MatchIn, when set, also queues the node's incoming packets (e.g. -i
	// eth0 or -s ADDR,ADDR), so each direction is delayed, as the
	// scenario's delay promises ("added in each direction").
	MatchIn []string
	Delay   time.Duration
	// Up and Down, when Down > 0, make the link flaky: it passes packets
	// for Up, then drops them for Down, and so on from the start.
	Up, Down time.Duration
	// MaxHeld bounds the packets held at once (the kernel queue's length);
	// beyond it the queue fails open. 0: DefaultMaxHeld.
	MaxHeld int
}

// DefaultMaxHeld is the bound on held packets: at 5000 packets/s, a
// second's worth.
const DefaultMaxHeld = 5000

// Validate checks the spec before anything is installed.
func (s QueueSpec) Validate() error {
	switch {
	case s.Delay < 0 || s.Delay > time.Minute:
		return fmt.Errorf("delay %v: want 0 to 1m", s.Delay)
	case s.Down < 0 || s.Up < 0 || (s.Down > 0 && s.Up <= 0):
		return fmt.Errorf("flaky up %v down %v: want positive durations", s.Up, s.Down)
	case s.Delay == 0 && s.Down == 0:
		return errors.New("neither a delay nor a flaky cycle: nothing to do")
	case len(s.Match) == 0:
		return errors.New("no match: the rule would queue every packet of the namespace")
	case s.MaxHeld < 0:
		return fmt.Errorf("max held %d: want 0 (default) or more", s.MaxHeld)
	}
	return nil
}

// QueueStats count what a Delayer did.
type QueueStats struct {
	Seen     int64 // packets the queue handed to the delayer
	Accepted int64
	Dropped  int64 // link-flaky's down periods
	Held     int64 // held now
	Overruns int64 // notifications the kernel could not deliver (their packets wait for the revert)
	Released int64 // packets the revert released early
}

// Delayer is a running delay or flaky-link fault; Revert ends it.
type Delayer struct {
	spec  QueueSpec
	q     *nfq
	chain string
	start time.Time

	mu   sync.Mutex
	held []heldPacket // FIFO: one delay for all, so due times are in order
	wake chan struct{}

	stop     chan struct{}
	done     sync.WaitGroup
	reverted sync.Once
	rerr     error
	stats    struct{ seen, accepted, dropped, overruns, released atomic.Int64 }
}

type heldPacket struct {
	id  uint32
	due time.Time
}

// StartDelayer binds the queue in the namespace, starts the delayer, then
// installs the rule; on any error it removes what it made. The caller
// proves the effect (a measured RTT) and calls Revert.
func StartDelayer(spec QueueSpec) (*Delayer, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("nfqueue delayer: %w", err)
	}
	if spec.MaxHeld == 0 {
		spec.MaxHeld = DefaultMaxHeld
	}
	q, err := openQueue(spec.nsPath(), spec.Queue, spec.MaxHeld)
	if err != nil {
		return nil, err
	}
	d := &Delayer{spec: spec, q: q, chain: fmt.Sprintf("fbq%d", spec.Queue), start: time.Now(),
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	d.done.Add(2)
	go d.readLoop()
	go d.releaseLoop()
	if err := d.install(); err != nil {
		return nil, errors.Join(err, d.Revert())
	}
	return d, nil
}

// nsPath is the namespace's path ("" for this process's).
func (s QueueSpec) nsPath() string {
	if s.NS == "" || strings.HasPrefix(s.NS, "/") {
		return s.NS
	}
	return "/run/netns/" + s.NS
}

// iptables runs iptables-nft in the delayer's namespace (entered with
// nsenter, which takes a named namespace's path and a container's
// /proc/PID/ns/net alike).
func (d *Delayer) iptables(args ...string) error {
	argv := append([]string{"-w", "5", "-t", "mangle"}, args...)
	cmd := exec.Command("iptables-nft", argv...)
	if ns := d.spec.nsPath(); ns != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + ns, "--", "iptables-nft"}, argv...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables-nft %s in %s: %v: %s", strings.Join(args, " "), d.nsName(), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (d *Delayer) nsName() string {
	if d.spec.NS == "" {
		return "this namespace"
	}
	return d.spec.NS
}

// hooks are the built-in chains a delayer's rules hang off, with the
// suffix of its own chain for each and the match it uses there.
func (d *Delayer) hooks() [][3]string {
	hs := [][3]string{{"OUTPUT", d.chain, "out"}}
	if len(d.spec.MatchIn) > 0 {
		hs = append(hs, [3]string{"INPUT", d.chain + "i", "in"})
	}
	return hs
}

// install puts each queue rule in a chain of its own, jumped to from
// OUTPUT (and INPUT), so the revert removes exactly them.
func (d *Delayer) install() error {
	for _, h := range d.hooks() {
		match := d.spec.Match
		if h[2] == "in" {
			match = d.spec.MatchIn
		}
		if err := d.iptables("-N", h[1]); err != nil {
			return err
		}
		rule := append(append([]string{"-A", h[1]}, match...),
			"-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(d.spec.Queue)), "--queue-bypass")
		if err := d.iptables(rule...); err != nil {
			return err
		}
		if err := d.iptables("-A", h[0], "-j", h[1]); err != nil {
			return err
		}
	}
	return nil
}

// uninstall removes the jumps and the chains; a namespace already gone
// took them with it.
func (d *Delayer) uninstall() error {
	var errs []error
	for _, h := range d.hooks() {
		for _, args := range [][]string{{"-D", h[0], "-j", h[1]}, {"-F", h[1]}, {"-X", h[1]}} {
			if err := d.iptables(args...); err != nil && !strings.Contains(err.Error(), "No chain") &&
				!strings.Contains(err.Error(), "does not exist") && !strings.Contains(err.Error(), "nsenter: cannot open") {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Installed reports whether any of the delayer's chains is listed in the
// namespace.
func (d *Delayer) Installed() bool {
	for _, h := range d.hooks() {
		if d.iptables("-S", h[1]) == nil {
			return true
		}
	}
	return false
}

// down reports whether a flaky link is in a down period at t.
func (d *Delayer) down(t time.Time) bool {
	if d.spec.Down <= 0 {
		return false
	}
	cycle := d.spec.Up + d.spec.Down
	return t.Sub(d.start)%cycle >= d.spec.Up
}

// readLoop takes packets off the queue: drops those of a down period at
// once, holds the others until their due time. It ends at Revert.
func (d *Delayer) readLoop() {
	defer d.done.Done()
	buf := make([]byte, 1<<16)
	var ids, drop []uint32
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		var err error
		ids, err = d.q.read(buf, ids[:0])
		if errors.Is(err, errOverrun) {
			d.stats.overruns.Add(1)
		}
		if len(ids) == 0 {
			continue
		}
		now := time.Now()
		d.stats.seen.Add(int64(len(ids)))
		if d.down(now) {
			drop = append(drop[:0], ids...)
			d.stats.dropped.Add(int64(len(drop)))
			_ = d.q.verdicts(drop, nfDrop)
			continue
		}
		if d.spec.Delay == 0 {
			d.stats.accepted.Add(int64(len(ids)))
			_ = d.q.verdicts(ids, nfAccept)
			continue
		}
		d.mu.Lock()
		for _, id := range ids {
			d.held = append(d.held, heldPacket{id: id, due: now.Add(d.spec.Delay)})
		}
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// releaseLoop accepts held packets when they are due. It ends at Revert,
// after which Revert releases whatever is still held.
func (d *Delayer) releaseLoop() {
	defer d.done.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []uint32
	for {
		d.mu.Lock()
		now := time.Now()
		i := 0
		for i < len(d.held) && !d.held[i].due.After(now) {
			i++
		}
		due = due[:0]
		for _, h := range d.held[:i] {
			due = append(due, h.id)
		}
		d.held = d.held[i:]
		next := time.Hour
		if len(d.held) > 0 {
			next = time.Until(d.held[0].due)
		}
		d.mu.Unlock()
		if len(due) > 0 {
			d.stats.accepted.Add(int64(len(due)))
			_ = d.q.verdicts(due, nfAccept)
		}
		timer.Reset(next)
		select {
		case <-d.stop:
			return
		case <-d.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Stats returns the delayer's counts so far.
func (d *Delayer) Stats() QueueStats {
	d.mu.Lock()
	held := int64(len(d.held))
	d.mu.Unlock()
	return QueueStats{Seen: d.stats.seen.Load(), Accepted: d.stats.accepted.Load(), Dropped: d.stats.dropped.Load(),
		Held: held, Overruns: d.stats.overruns.Load(), Released: d.stats.released.Load()}
}

// Revert removes the rule first (no packet enters the queue after), then
// stops the delayer and accepts every packet it still holds, then closes
// the queue (the kernel drops what it still queued and never notified:
// QueueStats.Overruns says whether there were any). Idempotent; safe from
// any goroutine.
func (d *Delayer) Revert() error {
	d.reverted.Do(func() {
		err := d.uninstall()
		close(d.stop)
		d.done.Wait()
		d.mu.Lock()
		ids := make([]uint32, len(d.held))
		for i, h := range d.held {
			ids[i] = h.id
		}
		d.held = nil
		d.mu.Unlock()
		d.stats.accepted.Add(int64(len(ids)))
		d.stats.released.Add(int64(len(ids)))
		err = errors.Join(err, d.q.verdicts(ids, nfAccept), d.q.close())
		if err != nil {
			d.rerr = fmt.Errorf("nfqueue delayer %d in %s: revert: %w", d.spec.Queue, d.nsName(), err)
		}
	})
	return d.rerr
}
