package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by each job's estimate, so ETAs are exact.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestRunBatchResumesFailsAndEstimates(t *testing.T) {
	root := t.TempDir()
	clock := &fakeClock{t: time.Unix(0, 0)}
	marker := func(dir string) bool { _, err := os.Stat(filepath.Join(dir, "done")); return err == nil }
	var ran []string
	job := func(id string, est time.Duration, fail bool) Job {
		return Job{ID: id, Dir: filepath.Join(root, id), Estimate: est, Complete: marker,
			Run: func(ctx context.Context, dir string) error {
				ran = append(ran, id)
				clock.t = clock.t.Add(2 * est) // every job takes twice its estimate
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				if fail {
					return errors.New("node 2 never became ready")
				}
				return os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
			}}
	}
	jobs := []Job{job("a", 10*time.Second, false), job("b", 30*time.Second, true), job("c", 20*time.Second, false)}
	var progress strings.Builder
	res, err := RunBatch(context.Background(), jobs, BatchOptions{Progress: &progress, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran != 3 || res.Failed != 1 || res.Skipped != 0 {
		t.Fatalf("result %+v", res)
	}
	out := progress.String()
	for _, want := range []string{"[1/3] a (ETA ~1m0s)", "[2/3] b (ETA 1m40s)", "b failed: node 2 never became ready", "[3/3] c (ETA 40s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	if reason, ok := FailedReason(filepath.Join(root, "b")); !ok || reason != "node 2 never became ready" {
		t.Errorf("failed.txt of b: %q %v", reason, ok)
	}

	// Without --resume the directories are refused; with it only b runs again.
	if _, err := RunBatch(context.Background(), jobs, BatchOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second batch without resume: %v", err)
	}
	ran = nil
	jobs[1] = job("b", 30*time.Second, false)
	progress.Reset()
	res, err = RunBatch(context.Background(), jobs, BatchOptions{Resume: true, Now: clock.now, Progress: &progress})
	if err != nil || res.Ran != 1 || res.Skipped != 2 || len(ran) != 1 || ran[0] != "b" {
		t.Fatalf("resume: %+v %v ran %v", res, err, ran)
	}
	// The ETA counts only what will run: b's 30 s, not the skipped a and c.
	if !strings.Contains(progress.String(), "[2/3] b (ETA ~30s)") || !strings.Contains(progress.String(), "[3/3] c: complete, skipped") {
		t.Errorf("resume progress:\n%s", progress.String())
	}
	if _, ok := FailedReason(filepath.Join(root, "b")); ok {
		t.Error("the redone job kept its failed.txt")
	}
}

func TestRunBatchInterrupted(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	jobs := []Job{
		{ID: "a", Dir: filepath.Join(root, "a"), Run: func(context.Context, string) error { cancel(); return context.Canceled }},
		{ID: "b", Dir: filepath.Join(root, "b"), Run: func(context.Context, string) error { t.Error("ran after the interrupt"); return nil }},
	}
	_, err := RunBatch(ctx, jobs, BatchOptions{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("err %v", err)
	}
}

// Without estimates (a sweep's runs) the ETA is the mean time of the runs
// done; a model command estimated at a second does not calibrate it.
func TestBatchETA(t *testing.T) {
	if got := eta(0, 0, 0, 0, 0, 3); got != "–" {
		t.Errorf("before the first job without estimates: %s", got)
	}
	if got := eta(20*time.Second, 0, 0, 0, 2, 3); got != "30s" {
		t.Errorf("mean of 10 s a job, 3 left: %s", got)
	}
	if got := eta(time.Millisecond, 0, 0, 9*time.Second, 10, 1); got != "~9s" {
		t.Errorf("after fast model commands: %s", got)
	}
}
