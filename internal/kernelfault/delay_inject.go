package kernelfault

import (
	"context"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/faultnet"
)

// LeverQueue is the lever of packet delay and flaky links on a kernel
// without netem: a userspace NFQUEUE delayer (StartDelayer) behind a rule
// in the node's namespace.
const LeverQueue = "nfqueue"

// Disturbance is what a QueueLever does to the packets it queues.
type Disturbance struct {
	Delay    time.Duration // hold each packet this long
	Up, Down time.Duration // flaky: pass for Up, drop for Down, repeatedly (Down 0: not flaky)
}

// QueueLever queues a node's outgoing packets to the peers to a delayer
// that delays or drops them. Like every lever it proves its effect (a
// measured round trip before and after) and its revert.
type QueueLever interface {
	Queue(l Label, node int, p Peers, d Disturbance) (Undo, error)
}

// registerQueueFaults registers delay and link-flaky of a black box on the
// queue lever. A backend that offers netem could register a netem lever
// first; none does on this project's kernel.
func registerQueueFaults() {
	q := fault.Support{Levers: []string{LeverQueue}, Systems: kernelSystems}
	fault.Register("delay", fault.WithParams(func() *faultnet.DelayParams { return faultnet.NewDelayParams().(*faultnet.DelayParams) }, injectDelay), q)
	fault.Register("link-flaky", fault.WithParams(func() *faultnet.FlakyParams { return faultnet.NewFlakyParams().(*faultnet.FlakyParams) }, injectFlaky), q)
}

func injectDelay(_ context.Context, t fault.Target, o fault.Occurrence, p *faultnet.DelayParams) (fault.Revert, error) {
	return queue(t, o, Disturbance{Delay: p.Delay})
}

// injectFlaky: the down periods drop packets (a queue verdict cannot
// answer with a reset, so mode cut drops too).
func injectFlaky(_ context.Context, t fault.Target, o fault.Occurrence, p *faultnet.FlakyParams) (fault.Revert, error) {
	return queue(t, o, Disturbance{Up: p.Up, Down: p.Down})
}

// queue puts the delayer where sites says: a link [a, b] at a, for its
// packets to and from b (each direction delayed, so the round trip a-b
// grows by twice the delay); node N for all its packets; scope client for
// its packets to and from the users.
func queue(t fault.Target, o fault.Occurrence, d Disturbance) (fault.Revert, error) {
	ql, err := lever[QueueLever](t, o, LeverQueue)
	if err != nil {
		return nil, err
	}
	ss, err := sites(t, o, false)
	if err != nil {
		return nil, err
	}
	return applyAll(ss, func(s site) (Undo, error) { return ql.Queue(label(o), s.node, s.peers, d) })
}
