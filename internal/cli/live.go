package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/live"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/scenario"
)

// liveFlags are the flags of run and sweep that follow a run live
// (docs/metrics.md, docs/guard.md).
type liveFlags struct {
	lines   string
	metrics string
	ui      string
	linger  time.Duration
	native  bool

	lw *lineWriter
}

func (f *liveFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.lines, "live", "", "write one JSON line per closed window to FILE (- for stdout)")
	cmd.Flags().StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at ADDR (e.g. 127.0.0.1:9464) while the run lasts")
	cmd.Flags().StringVar(&f.ui, "ui", "", "serve a live page at ADDR (e.g. 127.0.0.1:8089) while the run lasts")
	cmd.Flags().DurationVar(&f.linger, "metrics-linger", 0, "keep --metrics and --ui up this long after the run, for a final scrape")
	cmd.Flags().BoolVar(&f.native, "native-histograms", false, "add a native histogram to the classic latency buckets (Prometheus needs --enable-feature=native-histograms)")
}

// open binds the addresses and opens the --live file, before the run, so
// that an address in use or a file that cannot be written is bad input
// (exit 2) and nothing runs; it checks sc's guard too (nil: a sweep, whose
// scenarios Load has checked). close releases what the run did not.
func (f *liveFlags) open(sc *scenario.Scenario, allowRemote bool, stdout io.Writer) (runner.LiveOptions, func(), error) {
	var o runner.LiveOptions
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (runner.LiveOptions, func(), error) {
		closeAll()
		return runner.LiveOptions{}, func() {}, BadInput(err)
	}
	if sc != nil {
		if _, err := runner.GuardRules(sc, allowRemote); err != nil {
			return fail(fmt.Errorf("%s: %w", sc.File(), err))
		}
	}
	var sameUI bool
	if f.metrics != "" {
		l, err := live.Listen("--metrics", f.metrics, allowRemote)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() { l.Close() })
		o.Metrics = l
		sameUI = f.ui == f.metrics
	}
	if f.ui != "" && !sameUI {
		l, err := live.Listen("--ui", f.ui, allowRemote)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() { l.Close() })
		o.UI = l
	}
	if f.lines != "" {
		var w io.Writer = stdout
		if f.lines != "-" {
			file, err := os.Create(f.lines)
			if err != nil {
				return fail(fmt.Errorf("--live %s: %v", f.lines, err))
			}
			closers = append(closers, func() { file.Close() })
			w = file
		}
		f.lw = &lineWriter{w: bufio.NewWriter(w)}
		o.Lines = f.lw
	}
	o.Linger, o.NativeHistograms = f.linger, f.native
	return o, closeAll, nil
}

// openSweep is open for a sweep named name: one live.Relay serves
// --metrics and --ui for every run in turn, and every run writes its
// windows to --live. end marks the sweep finished, keeps the addresses up
// for --metrics-linger (cut short when ctx ends) and releases everything.
func (f *liveFlags) openSweep(name string, stdout io.Writer) (runner.LiveOptions, func(context.Context), error) {
	o, closeAll, err := f.open(nil, false, stdout)
	if err != nil {
		return o, nil, err
	}
	var servers []*live.Server
	if o.Metrics != nil || o.UI != nil {
		o.Relay = live.NewRelay(name)
		for _, l := range []net.Listener{o.Metrics, o.UI} {
			if l != nil {
				servers = append(servers, o.Relay.Serve(l))
			}
		}
		o.Metrics, o.UI = nil, nil
	}
	end := func(ctx context.Context) {
		if o.Relay != nil {
			o.Relay.Finish()
			live.Linger(ctx, f.linger)
		}
		for _, s := range servers {
			_ = s.Close()
		}
		closeAll()
	}
	return o, end, nil
}

func (f *liveFlags) lineErr() error {
	if f.lw == nil {
		return nil
	}
	return f.lw.err
}

// lineWriter flushes after every line, so a follower sees each window as
// it closes.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(b)
	if err == nil {
		err = l.w.Flush()
	}
	if err != nil && l.err == nil {
		l.err = err
	}
	return n, err
}

// abortedExit says why the guard stopped the run, and exits 3 (the
// scenario's own limit was reached, as with a missed threshold).
func abortedExit(res *runner.Result, w io.Writer) error {
	a := res.Aborted
	fmt.Fprintf(w, "aborted: guard %q held at %.1fs; every fault reverted, operator stopped, load kept for the cooldown; results in %s\n", a.By, a.AtS, res.Dir)
	return &ExitError{Code: ExitThreshold, Err: fmt.Errorf("stopped by guard %q: %w", a.By, ErrReported)}
}
