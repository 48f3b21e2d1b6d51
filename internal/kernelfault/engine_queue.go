package kernelfault

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Queueing is a delay or a flaky link through NFQUEUE (delay.go): the
// target's packets to and from Addrs (or every packet on its interface)
// are queued, in each direction, to a Delayer run by the process that
// applies the fault, which holds each one for Delay, or drops those of
// the Down periods of an Up/Down cycle. The target is a named namespace
// (under /run/netns) or a process's (/proc/PID/ns/net: a container's).
type Queueing struct {
	Num   uint16        `json:"num"` // NFQUEUE number, unique within the namespace
	Addrs []string      `json:"addrs,omitempty"`
	All   bool          `json:"all,omitempty"`
	Delay time.Duration `json:"delay,omitempty"`
	Up    time.Duration `json:"up,omitempty"`
	Down  time.Duration `json:"down,omitempty"`
	// Probe: the round trip to Probe[0] proves a delay; datagrams to each
	// prove a flaky link.
	Probe []string `json:"probe"`
}

func (q *Queueing) check(id string, t Target) error {
	if q.Num == 0 {
		return fmt.Errorf("fault %s: queue number 0: want 1..65535", id)
	}
	if err := t.checkNet(); err != nil {
		return fmt.Errorf("fault %s: %w", id, err)
	}
	if err := q.spec(t).Validate(); err != nil {
		return fmt.Errorf("fault %s: %w", id, err)
	}
	return checkPeers(id, q.Addrs, q.All, q.Probe)
}

// spec is the Delayer's spec: the outgoing packets to the peers (-d, or
// -o the interface) and the incoming ones from them (-s, or -i).
func (q *Queueing) spec(t Target) QueueSpec {
	out, in := []string{"-o", t.iface()}, []string{"-i", t.iface()}
	if !q.All {
		out, in = []string{"-d", strings.Join(q.Addrs, ",")}, []string{"-s", strings.Join(q.Addrs, ",")}
	}
	return QueueSpec{NS: t.Netns, Queue: q.Num, Match: out, MatchIn: in, Delay: q.Delay, Up: q.Up, Down: q.Down}
}

// queued is a delayer this process runs, with what its revert reports.
type queued struct {
	dl     *Delayer
	before time.Duration // the round trip to the probe before the fault
}

// applyQueue binds the queue, starts the delayer, installs the rules and
// proves the effect: for a delay the median TCP round trip from the
// namespace to Probe[0] grows by at least half the delay (it grows by
// twice the delay: each direction is queued and the delayer never
// releases early); for a flaky link the queue sees probe datagrams.
func applyQueue(id string, t Target, q *Queueing) (string, error) {
	spec := q.spec(t)
	before, _ := RoundTrip(t.path(), q.Probe[0])
	dl, err := StartDelayer(spec)
	if err != nil {
		return "", err
	}
	undo := func() error { return dl.Revert() }
	var evidence string
	if q.Down > 0 {
		evidence, err = flakyProof(t.path(), dl, q.Probe)
	} else {
		evidence, err = delayProof(t.path(), dl, q.Probe[0], before, q.Delay)
	}
	if err != nil {
		return "", withUndo(fmt.Errorf("the queue did not take effect: %w", err), undo)
	}
	hold(id, &queued{dl: dl, before: before})
	return fmt.Sprintf("NFQUEUE delayer in %s for packets %s: %s", t.Netns, strings.Join(spec.Match, " "), evidence), nil
}

// revertQueue removes the rules first (no packet enters the queue after),
// releases every held packet and closes the queue, proves the chains gone
// and measures the round trip again. A fault this process does not run
// (its delayer went with the process that applied it: cleanup of a dead
// run) has only its chains left, which it removes by name.
func revertQueue(id string, t Target, q *Queueing) (string, error) {
	spec := q.spec(t)
	run, _ := release(id).(*queued)
	if run == nil {
		if t.gone() {
			return "namespace " + t.Netns + " gone, its queue rules with it", nil
		}
		orphan := &Delayer{spec: spec, chain: fmt.Sprintf("fbq%d", q.Num)}
		if err := orphan.uninstall(); err != nil {
			return "", fmt.Errorf("nfqueue %d in %s: %w", q.Num, t.Netns, err)
		}
		if orphan.Installed() {
			return "", fmt.Errorf("NFQUEUE chain fbq%d still in %s after its removal", q.Num, t.Netns)
		}
		return fmt.Sprintf("NFQUEUE chains fbq%d removed from %s (its delayer had ended with the process that ran it)", q.Num, t.Netns), nil
	}
	if err := run.dl.Revert(); err != nil {
		if t.gone() {
			return "namespace " + t.Netns + " gone, its queue rules with it", nil
		}
		return "", err
	}
	if run.dl.Installed() {
		return "", fmt.Errorf("the NFQUEUE chain fbq%d is still in %s", q.Num, t.Netns)
	}
	after, _ := RoundTrip(t.path(), q.Probe[0])
	st := run.dl.Stats()
	return fmt.Sprintf("NFQUEUE rule removed from %s and %d held packets released; median TCP round trip to %s now %s (%s before the fault); queue passed %d, dropped %d, overruns %d",
		t.Netns, st.Released, q.Probe[0], ms(after), ms(run.before), st.Accepted, st.Dropped, st.Overruns), nil
}

// delayProof requires the round trip to have grown by at least half the
// delay.
func delayProof(nsPath string, dl *Delayer, target string, before, delay time.Duration) (string, error) {
	after, err := RoundTrip(nsPath, target)
	st := dl.Stats()
	detail := fmt.Sprintf("median TCP round trip to %s %s before, %s after (+%s for delay %s each way); queue saw %d packets",
		target, ms(before), ms(after), ms(after-before), delay, st.Seen)
	switch {
	case st.Seen == 0:
		return detail, fmt.Errorf("%s: no packet reached the queue (%v)", detail, err)
	case err != nil:
		// The peer does not answer (another fault cuts the link): the
		// round trip cannot show the delay, the queue's count can.
		return fmt.Sprintf("round trip to %s not measurable (%v); queue saw %d packets of the probe and holds each for %s", target, err, st.Seen, delay), nil
	case after-before < delay/2:
		return detail, errors.New(detail)
	}
	return detail, nil
}

// flakyProof requires the queue to have seen probe datagrams.
func flakyProof(nsPath string, dl *Delayer, targets []string) (string, error) {
	if err := InNetns(nsPath, func() error { return SendProbes(targets, 20) }); err != nil {
		return "", err
	}
	var st QueueStats
	deadline := time.Now().Add(2 * time.Second)
	for st = dl.Stats(); st.Seen == 0 && time.Now().Before(deadline); st = dl.Stats() {
		time.Sleep(5 * time.Millisecond)
	}
	detail := fmt.Sprintf("probe: queue saw %d packets, dropped %d, passed %d", st.Seen, st.Dropped, st.Accepted)
	if st.Seen == 0 {
		return detail, fmt.Errorf("%s within 2s", detail)
	}
	return detail, nil
}

// RoundTrip is the median time, over 5 tries from inside the network
// namespace at nsPath ("" for this process's), for a TCP connection to
// target's discard port to be answered (refused or accepted: either takes
// one round trip). Each try waits at most a second.
func RoundTrip(nsPath, target string) (time.Duration, error) {
	var rtts []time.Duration
	probe := func() error {
		for range 5 {
			t0 := time.Now()
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(target, "9"), time.Second)
			rtt := time.Since(t0)
			if err == nil {
				conn.Close()
			} else if !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("round trip to %s: %w", target, err)
			}
			rtts = append(rtts, rtt)
		}
		return nil
	}
	var err error
	if nsPath == "" {
		err = probe()
	} else {
		err = InNetns(nsPath, probe)
	}
	if len(rtts) == 0 {
		return 0, err
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
