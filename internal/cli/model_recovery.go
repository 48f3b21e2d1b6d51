package cli

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"

	"github.com/faultbench/faultbench/internal/model"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// Recovery time of a restarted replica, as Dumitras and Narasimhan (2005)
// §3.2 define it: from the restart to the instant the new replica processes
// its first request. A restart is an operator.action on a node, or a node.up
// of a node that was down with no action before it (a system that restarts
// its own replicas); its end is the completion of the first ok request sent
// to that node no earlier than the restart.

// restart is one measured restart of one node in one run.
type restart struct {
	Node      int     `json:"node"`
	AtS       float64 `json:"at_s"`
	RecoveryS float64 `json:"recovery_s"` // NaN when the node served nothing afterwards
}

// recoveryGroup is every restart of the runs with one client count.
type recoveryGroup struct {
	Clients   int     `json:"clients"`
	Runs      int     `json:"runs"`
	Restarts  int     `json:"restarts"`
	Recovered int     `json:"recovered"` // restarts followed by a served request
	MeanS     float64 `json:"mean_recovery_s"`
	MaxS      float64 `json:"max_recovery_s"`
}

// measureRestarts finds the restarts in events and the recovery time of
// each from the requests. Events must be in timeline order.
func measureRestarts(events []record.Event, reqs []record.Request) []restart {
	var out []restart
	down := map[int]bool{}
	pending := map[int]bool{} // node has an action not yet followed by node.up
	for _, e := range events {
		if e.Node <= 0 {
			continue
		}
		switch e.Kind {
		case "node.down":
			down[e.Node] = true
		case "operator.action":
			if !pending[e.Node] {
				out = append(out, restart{Node: e.Node, AtS: e.TS})
				pending[e.Node] = true
			}
		case "node.up":
			if down[e.Node] && !pending[e.Node] {
				out = append(out, restart{Node: e.Node, AtS: e.TS})
			}
			down[e.Node], pending[e.Node] = false, false
		}
	}
	for i := range out {
		first := math.Inf(1)
		for _, r := range reqs {
			if r.Node == out[i].Node && r.Outcome == record.OK && r.Measured() && r.StartS >= out[i].AtS {
				first = math.Min(first, r.StartS+r.LatencyS)
			}
		}
		out[i].RecoveryS = math.NaN()
		if !math.IsInf(first, 1) {
			out[i].RecoveryS = first - out[i].AtS
		}
	}
	return out
}

// runRestarts reads one run directory: its client count and its restarts.
func runRestarts(dir string) (int, []restart, error) {
	sc, err := scenario.Load(filepath.Join(dir, record.ScenarioFile))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", dir, err)
	}
	events, err := record.ReadEvents(filepath.Join(dir, record.EventsFile))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", dir, err)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].TS < events[j].TS })
	var reqs []record.Request
	if err := record.ReadRequests(dir, func(r record.Request) error { reqs = append(reqs, r); return nil }); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return sc.Workload.Clients, measureRestarts(events, reqs), nil
}

// recoveryStudy is the measured recovery times and the 3-replica MTTF they give.
type recoveryStudy struct {
	Groups        []recoveryGroup `json:"by_clients"`
	MeanS         float64         `json:"mean_recovery_s"`
	Unit          string          `json:"unit"`
	Rows          []mttfRow       `json:"mttf"`
	unmatchedRuns []string
}

// mttfRow is one fault rate of Fig. 4(b): three active replicas' MTTF
// without restart (11/(6λ)) and with restart at the measured recovery rate.
type mttfRow struct {
	ReplicaMTTF     float64 `json:"replica_mttf"`
	MTTFNoRestart   float64 `json:"mttf_no_restart"`
	MTTFWithRestart float64 `json:"mttf_with_restart"`
}

// studyRecovery measures every run and evaluates the model for each
// per-replica MTTF (in unit u seconds).
func studyRecovery(dirs []string, mttfs []float64, unit string, u float64) (*recoveryStudy, error) {
	byClients := map[int]*recoveryGroup{}
	var sum float64
	var n int
	st := &recoveryStudy{Unit: unit}
	for _, d := range dirs {
		clients, rs, err := runRestarts(d)
		if err != nil {
			return nil, BadInput(err)
		}
		g := byClients[clients]
		if g == nil {
			g = &recoveryGroup{Clients: clients}
			byClients[clients] = g
		}
		g.Runs++
		if len(rs) == 0 {
			st.unmatchedRuns = append(st.unmatchedRuns, d)
		}
		for _, r := range rs {
			g.Restarts++
			if math.IsNaN(r.RecoveryS) {
				continue
			}
			g.Recovered++
			g.MeanS += r.RecoveryS
			g.MaxS = math.Max(g.MaxS, r.RecoveryS)
			sum += r.RecoveryS
			n++
		}
	}
	if n == 0 {
		return nil, BadInput(fmt.Errorf("--recovery-from: no restart followed by a served request in %d run directories (a restart is an operator.action or a node.up after node.down in events.jsonl); run a scenario whose requests name the node that served them and whose operator restarts a replica, e.g. examples/quickstart.yaml (SSM records only its front end, so its bricks cannot be measured this way)", len(dirs)))
	}
	for _, g := range byClients {
		if g.Recovered > 0 {
			g.MeanS /= float64(g.Recovered)
		}
		st.Groups = append(st.Groups, *g)
	}
	sort.Slice(st.Groups, func(i, j int) bool { return st.Groups[i].Clients < st.Groups[j].Clients })
	st.MeanS = sum / float64(n)
	mttr := st.MeanS / u
	for _, m := range mttfs {
		with, err := model.KofN{N: 3, K: 1, MTTF: m, MTTR: mttr}.Evaluate()
		if err != nil {
			return nil, modelErr(err)
		}
		without, err := model.KofN{N: 3, K: 1, MTTF: m}.Evaluate()
		if err != nil {
			return nil, modelErr(err)
		}
		st.Rows = append(st.Rows, mttfRow{ReplicaMTTF: m, MTTFNoRestart: float64(without.MTTF), MTTFWithRestart: float64(with.MTTF)})
	}
	return st, nil
}

func (s *recoveryStudy) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, "recovery time (restart → first request served), by client count")
	fmt.Fprintf(w, "%8s %5s %9s %10s %11s %10s\n", "clients", "runs", "restarts", "recovered", "mean_s", "max_s")
	for _, g := range s.Groups {
		fmt.Fprintf(w, "%8d %5d %9d %10d %11.4f %10.4f\n", g.Clients, g.Runs, g.Restarts, g.Recovered, g.MeanS, g.MaxS)
	}
	for _, d := range s.unmatchedRuns {
		fmt.Fprintf(w, "note: %s has no restart\n", d)
	}
	fmt.Fprintf(w, "mean recovery time %.4f s → μ = %.4g /s\n\n", s.MeanS, 1/s.MeanS)
	fmt.Fprintln(w, "3 active replicas, 1 must be up (Dumitras and Narasimhan 2005, Fig. 4(b))")
	fmt.Fprintf(w, "%16s %20s %20s\n", "replica_mttf_"+s.Unit, "mttf_no_restart_"+s.Unit, "mttf_restart_"+s.Unit)
	for _, r := range s.Rows {
		fmt.Fprintf(w, "%16.6g %20.6g %20.6g\n", r.ReplicaMTTF, r.MTTFNoRestart, r.MTTFWithRestart)
	}
	return nil
}
