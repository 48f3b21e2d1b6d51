package docker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// medianGet is the median time of n GETs of node addr's health page, each
// on a new connection; an error if any fails.
func medianGet(addr string, n int) (time.Duration, error) {
	var ds []time.Duration
	for range n {
		t0 := time.Now()
		if err := get(addr); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// TestDelayAndFlakyLinkOfAContainer delays a container's packets to and
// from the users with the warden's NFQUEUE delayer in the container's
// namespace, measures the users' latency grow by the delay and come back
// after the revert, then makes the link between two containers flaky and
// takes that back too.
func TestDelayAndFlakyLinkOfAContainer(t *testing.T) {
	eng := engine(t)
	c, events := startCluster(t, eng, 2)
	a1 := c.Nodes()[0].Addr
	before, err := medianGet(a1, 5)
	if err != nil {
		t.Fatal(err)
	}
	const delay = 50 * time.Millisecond
	undo, err := c.Queue(kernelfault.Label{Fault: "delay", ID: 1}, 1, kernelfault.Peers{Client: true}, kernelfault.Disturbance{Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	// A GET on a new connection crosses the node's interface four times
	// (SYN in, SYN-ACK out, request in, answer out), each held for the
	// delay; ask for at least half of that.
	during, err := medianGet(a1, 5)
	if err != nil {
		t.Fatalf("delayed node: %v", err)
	}
	if during-before < 2*delay {
		t.Errorf("median GET %v before the delay, %v during it: want at least %v more", before, during, 2*delay)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	var after time.Duration
	eventually(t, "the GET's latency back after the revert", func() error {
		if after, err = medianGet(a1, 5); err != nil || after-before >= delay {
			return fmt.Errorf("median GET %v (before the delay %v): %v", after, before, err)
		}
		return nil
	})
	t.Logf("median GET of node 1: %v before, %v with %v delay each way, %v after", before, during, delay, after)

	undo, err = c.Queue(kernelfault.Label{Fault: "link-flaky", ID: 2}, 1, kernelfault.Peers{Nodes: []int{1, 2}},
		kernelfault.Disturbance{Up: 200 * time.Millisecond, Down: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events() {
		if e.Kind == "fault.effective" || e.Kind == "fault.reverted" {
			got = append(got, e.Kind+" "+strings.Fields(e.Detail)[1])
			if !strings.Contains(e.Detail, "NFQUEUE") {
				t.Errorf("%s %s: no NFQUEUE evidence: %s", e.Kind, e.Fault, e.Detail)
			}
		}
	}
	want := "fault.effective nfqueue: fault.reverted nfqueue: fault.effective nfqueue: fault.reverted nfqueue:"
	if strings.Join(got, " ") != want {
		t.Errorf("events %v, want %s", got, want)
	}
}

// TestDisconnectIsNotAPulledCable takes a node's container off the run's
// network: the node no longer answers, its own sends fail at once with
// ENETUNREACH (the fault's proof), the other node is untouched, and the
// revert puts it back with its address.
func TestDisconnectIsNotAPulledCable(t *testing.T) {
	eng := engine(t)
	c, events := startCluster(t, eng, 2)
	a1, a2 := c.Nodes()[0].Addr, c.Nodes()[1].Addr
	undo, err := c.Disconnect(kernelfault.Label{Fault: "disconnect", ID: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(a1); err == nil {
		t.Error("node 1 answered off the network")
	}
	if err := get(a2); err != nil {
		t.Errorf("node 2, not disconnected: %v", err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if err := get(a1); err != nil {
		t.Errorf("node 1 after the reconnect: %v", err)
	}
	var got []string
	for _, e := range events() {
		if e.Kind == "fault.effective" || e.Kind == "fault.reverted" {
			got = append(got, strings.Fields(e.Detail)[1])
		}
	}
	if want := "docker-disconnect: docker-connect:"; strings.Join(got, " ") != want {
		t.Errorf("mechanisms %v, want %s", got, want)
	}
}
