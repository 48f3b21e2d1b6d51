// Package progress shows a long run's progress on a terminal: phase,
// elapsed/total, live request rate, success % and p99 latency. It draws
// nothing when its output is not a terminal.
package progress

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Stats is what the bar shows besides time; the run supplies it.
type Stats struct {
	Phase string
	Total int64   // attempts recorded so far
	OK    int64   // ok attempts so far
	P99   float64 // seconds, recent; NaN if unknown
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Show draws a bar for a run of length total on w until ctx ends, polling
// stats every interval. elapsed tells the time since the run started. It
// returns when ctx ends, after drawing the bar a last time.
func Show(ctx context.Context, w io.Writer, total time.Duration, elapsed func() time.Duration, stats func() Stats) {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithRefreshRate(250*time.Millisecond))
	var cur Stats
	var lastTotal int64
	var rate float64
	lastT := time.Duration(0)
	info := decor.Any(func(decor.Statistics) string {
		succ := "–"
		if cur.Total > 0 {
			succ = fmt.Sprintf("%.1f%%", 100*float64(cur.OK)/float64(cur.Total))
		}
		p99 := "–"
		if !math.IsNaN(cur.P99) {
			p99 = fmt.Sprintf("%.0fms", cur.P99*1000)
		}
		return fmt.Sprintf("%6.0f req/s  ok %s  p99 %s", rate, succ, p99)
	})
	phase := decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%-10s", cur.Phase) })
	clock := decor.Any(func(s decor.Statistics) string {
		return fmt.Sprintf("%s/%s", time.Duration(s.Current).Truncate(time.Second), time.Duration(s.Total).Truncate(time.Second))
	})
	bar := p.AddBar(int64(total), mpb.PrependDecorators(phase, clock), mpb.AppendDecorators(info), mpb.BarRemoveOnComplete())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	update := func() {
		now := elapsed()
		cur = stats()
		if dt := (now - lastT).Seconds(); dt > 0 {
			rate = float64(cur.Total-lastTotal) / dt
		}
		lastTotal, lastT = cur.Total, now
		bar.SetCurrent(int64(min(now, total)))
	}
	for {
		select {
		case <-ctx.Done():
			update()
			bar.Abort(false)
			p.Wait()
			return
		case <-tick.C:
			update()
		}
	}
}
