package live

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// The latency histogram is split by node and by client emulator, as the
// request counters are; the generator's refusals and cut-short attempts
// count as requests but have no latency to observe.
func TestLatencyByNodeAndClient(t *testing.T) {
	clock := time.Duration(0)
	h := New(Config{RunID: "r", Name: "n", Nodes: 2, Clients: 2, WindowS: 1, LengthS: 2,
		Phases: []Phase{{Name: "all", StartS: 0, EndS: 2}}, Clock: func() time.Duration { return clock }})
	f := h.Follower()
	sent := map[[2]string]uint64{{"1", "0"}: 3, {"1", "1"}: 1, {"2", "1"}: 2}
	for k, n := range sent {
		for range n {
			f.Request(&record.Request{LatencyS: 0.01, Outcome: record.OK, Node: int(k[0][0] - '0'), Client: int(k[1][0] - '0')})
		}
	}
	f.Request(&record.Request{Node: 2, Client: 0, Refused: record.RefusedMaxInFlight})
	f.Request(&record.Request{Node: 2, Client: 0, CutShort: true, LatencyS: 6})

	fams, err := h.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]uint64{}
	for _, fam := range fams {
		if fam.GetName() != "faultbench_request_duration_seconds" {
			continue
		}
		for _, m := range fam.GetMetric() {
			var k [2]string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "node":
					k[0] = l.GetValue()
				case "client":
					k[1] = l.GetValue()
				}
			}
			if c := m.GetHistogram().GetSampleCount(); c > 0 {
				got[k] = c
			}
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("latency observed per (node, client) %v, want %v", got, sent)
	}
	for k, n := range sent {
		if got[k] != n {
			t.Errorf("node %s client %s: %d latencies observed, want %d", k[0], k[1], got[k], n)
		}
	}
}
