package analysis

import (
	"fmt"
	"math"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/scenario"
)

// How a window is judged against the baseline band (Definitions.Judge,
// Options.Judge, `analyze --judge`).
const (
	// JudgeThroughput holds a window's ok throughput (ok/s) against the
	// band: the figure of schema 2 and before, and the one for closed-loop
	// users, whose offered load falls when the server slows, so that their
	// goodput stays near 1 exactly when they suffer.
	JudgeThroughput = "throughput"
	// JudgeGoodput holds what a window served of what was offered in it,
	// scaled to the baseline's offered rate (ok/offered × R, in ok/s),
	// against the band: the arrival process's own swing (a Poisson window
	// offers ±√(Rw) requests) no longer moves the figure, only lost
	// requests do. The default for open-loop workloads.
	JudgeGoodput = "goodput"
)

// goodputFloorRequests is the least half-width of a goodput band, in
// requests per window: a baseline that lost nothing has σ = 0, and one lost
// request would then be a deviation. With this floor one lost request in a
// window is never one by itself; two are (choice, docs/metrics.md).
const goodputFloorRequests = 1.5

// DefaultJudge is the judge of a run: goodput for an open-loop workload
// (every request scheduled in advance), throughput for closed-loop users
// and for a record without a scenario (its load model is unknown).
func DefaultJudge(sc *scenario.Scenario) string {
	if sc == nil || sc.Workload.Model == "closed" {
		return JudgeThroughput
	}
	return JudgeGoodput
}

// checkJudge rejects a judge that is neither of the two.
func checkJudge(j string) error {
	switch j {
	case "", JudgeThroughput, JudgeGoodput:
		return nil
	}
	return fmt.Errorf("judge %q: want %q (ok/s, closed-loop users) or %q (ok/offered × the baseline's offered rate, open-loop arrivals)",
		j, JudgeThroughput, JudgeGoodput)
}

// judge turns a window's counts into the figure held against the band.
type judge struct {
	by   string  // JudgeThroughput or JudgeGoodput
	w    float64 // window length, s
	rate float64 // goodput: the baseline's mean offered rate, requests/s
}

// offered is what a window was offered: every attempt scheduled in it.
func (ws *winStat) offered() int64 { return ws.mom.n + ws.refused + ws.cutShort }

// share is a window's ok fraction of what was offered in it (1 when it was
// offered nothing: nothing was lost), or its ok/s for the throughput judge.
func (j judge) share(ws *winStat) float64 {
	ok := float64(ws.outcomes[record.OK])
	if j.by != JudgeGoodput {
		return ok / j.w
	}
	n := ws.offered()
	if n == 0 {
		return 1
	}
	return ok / float64(n)
}

// emptyMinRequests is the least count a window is expected to be offered
// (baseline rate × window) for a window offered nothing to count as a
// window that served nothing: the Poisson chance of an empty window is then
// e⁻¹⁰ ≈ 5·10⁻⁵, so the generator or the record stopped, and the service
// was not seen to serve. Below it an empty window lost nothing.
const emptyMinRequests = 10

// value is a window's judged figure in ok/s.
func (j judge) value(ws *winStat) float64 {
	if j.by != JudgeGoodput {
		return j.share(ws)
	}
	if ws.offered() == 0 && j.rate*j.w >= emptyMinRequests {
		return 0
	}
	return j.share(ws) * j.rate
}

// series is the judged figure of every window of wins.
func (j judge) series(wins []winStat) []float64 {
	x := make([]float64, len(wins))
	for i := range wins {
		x[i] = j.value(&wins[i])
	}
	return x
}

// widen gives a goodput band its floor of goodputFloorRequests a window.
func (j judge) widen(b *band) {
	if b == nil || j.by != JudgeGoodput {
		return
	}
	half := math.Max(BandZ*b.sd, goodputFloorRequests/j.w)
	b.low, b.high = b.mean-half, b.mean+half
}
