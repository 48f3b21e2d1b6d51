package warden

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/node"
)

// Kind is the node kind of the warden process.
const Kind = "warden"

// DefaultLease is how long the warden waits for a renewal before it
// reverts everything; the controller renews every RenewEvery.
const (
	DefaultLease = 5 * time.Second
	RenewEvery   = time.Second
)

func init() {
	node.Register(Kind, func(ctx context.Context, cfg node.Config) error {
		lease := DefaultLease
		if s := cfg.Options["lease"]; s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return fmt.Errorf("%w: option lease=%q: want a positive duration such as 5s", node.ErrConfig, s)
			}
			lease = d
		}
		run := cfg.Options["run"]
		if !runIDRE.MatchString(run) {
			return fmt.Errorf("%w: option run=%q: want the run id (12 hex digits)", node.ErrConfig, run)
		}
		controller, err := strconv.Atoi(cfg.Options["controller"])
		if err != nil || controller <= 1 {
			return fmt.Errorf("%w: option controller=%q: want the controller's pid", node.ErrConfig, cfg.Options["controller"])
		}
		if err := protect(); err != nil {
			fmt.Fprintf(os.Stderr, "warden: %v: a node's memory pressure could take the warden down\n", err)
		}
		j, err := OpenFor(run, controller)
		if err != nil {
			return err
		}
		ln, err := Listen(run)
		if err != nil {
			return err
		}
		renewed := make(chan struct{}, 1)
		srv := &Server{Run: run, Controller: controller, Journal: j, Renewed: renewed,
			Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "warden: "+f+"\n", a...) }}
		sctx, stop := context.WithCancel(ctx)
		go srv.Serve(sctx, ln)
		fmt.Println("ready") // the controller waits for this line
		logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "warden: "+f+"\n", a...) }
		why := GuardWith(ctx, os.Stdin, renewed, lease, func(why string) {
			reverted, err := srv.Lapse(why)
			for _, r := range reverted {
				logf("%s: reverted %s", why, r)
			}
			if err != nil {
				logf("%s: %v", why, err)
			}
		})
		stop()
		_ = os.Remove(SocketPath(run))
		j.close()
		removed, err := RemoveRun(run)
		for _, r := range removed {
			fmt.Fprintf(os.Stderr, "warden: %s: removed %s\n", why, r)
		}
		return err
	})
}

// protect makes the kernel's OOM killer spare the warden
// (oom_score_adj -1000): mem-pressure on a node must never take it down.
func protect() error {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0o644); err != nil {
		return fmt.Errorf("set oom_score_adj -1000: %w", err)
	}
	return nil
}

// Guard reads lease renewals (any line) from r until the pipe closes, ctx
// ends, or no renewal arrives within lease; it says which.
func Guard(ctx context.Context, r io.Reader, lease time.Duration) string {
	return GuardWith(ctx, r, nil, lease, nil)
}

// GuardWith is Guard where a value on renewed (the socket's renew
// requests) also renews the lease. With onLapse, a lapsed lease calls it
// once (to revert the run's faults) and the guard goes on until the pipe
// closes or ctx ends: the controller, starved, may still come back to
// find its run invalid, and its pipe's closing removes the rest.
func GuardWith(ctx context.Context, r io.Reader, renewed <-chan struct{}, lease time.Duration, onLapse func(why string)) string {
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- struct{}{}
		}
	}()
	t := time.NewTimer(lease)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return "stopped"
		case _, ok := <-lines:
			if !ok {
				return "controller gone"
			}
			resetTimer(t, lease)
		case <-renewed:
			resetTimer(t, lease)
		case <-t.C:
			why := fmt.Sprintf("lease of %v lapsed", lease)
			if onLapse == nil {
				return why
			}
			onLapse(why)
			onLapse, renewed = nil, nil
			t.Reset(time.Duration(math.MaxInt64))
		}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// RemoveRun replays run id's journal, removes what it lists, and deletes
// the journal when everything went.
func RemoveRun(runID string) ([]string, error) {
	recs, err := Read(Path(runID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	removed, err := Remove(recs)
	if err == nil {
		for _, f := range []struct{ what, path string }{{"journal", Path(runID)}, {"socket", SocketPath(runID)}} {
			if os.Remove(f.path) == nil {
				removed = append(removed, f.what+" "+f.path)
			}
		}
	}
	return removed, err
}

// ErrRunAlive is returned by CleanupRun for a run whose controller still
// runs.
var ErrRunAlive = errors.New("its controller is still running")

// Cleanup removes what the runs whose controller is gone left behind,
// journal by journal; it returns one line per removed object, prefixed
// with the run id. Runs still alive are left alone.
func Cleanup() ([]string, error) {
	paths, _ := filepath.Glob(filepath.Join(Dir, "*.journal"))
	var out []string
	var errs []error
	for _, p := range paths {
		run := strings.TrimSuffix(filepath.Base(p), ".journal")
		if CheckRunID(run) != nil {
			continue // not a journal faultbench wrote
		}
		removed, err := CleanupRun(run)
		out = append(out, removed...)
		if err != nil && !errors.Is(err, ErrRunAlive) {
			errs = append(errs, err)
		}
	}
	// A socket without a journal is a killed warden's: every live run has
	// a journal.
	socks, _ := filepath.Glob(filepath.Join(Dir, "*.sock"))
	for _, s := range socks {
		run := strings.TrimSuffix(filepath.Base(s), ".sock")
		if _, err := os.Stat(Path(run)); errors.Is(err, os.ErrNotExist) && os.Remove(s) == nil {
			out = append(out, "run "+run+": socket "+s)
		}
	}
	return out, errors.Join(errs...)
}

// CleanupRun removes what run id left behind, as Cleanup does for every
// dead run: one line per removed object, prefixed with the run id. A run
// whose controller still runs is left alone (ErrRunAlive); one without a
// journal has nothing to remove.
func CleanupRun(runID string) ([]string, error) {
	if err := CheckRunID(runID); err != nil {
		return nil, err
	}
	recs, err := Read(Path(runID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	if ControllerAlive(recs) {
		return nil, fmt.Errorf("run %s: %w (stop it with Ctrl-C; its warden removes everything when it ends)", runID, ErrRunAlive)
	}
	removed, err := RemoveRun(runID)
	out := make([]string, len(removed))
	for i, r := range removed {
		out[i] = "run " + runID + ": " + r
	}
	if err != nil {
		return out, fmt.Errorf("run %s: %w", runID, err)
	}
	return out, nil
}

// CheckRunID refuses what is not a run id.
func CheckRunID(runID string) error {
	if !runIDRE.MatchString(runID) {
		return fmt.Errorf("run id %q: want 12 hex digits (run_id in the results' provenance.json)", runID)
	}
	return nil
}

// ipRun runs ip(8) with args; the error carries its output.
func ipRun(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
