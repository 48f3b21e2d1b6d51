package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Job is one unit of a batch: a run into a directory of its own. A sweep's
// configuration × repetition is one, and so is each run of `faultbench
// reproduce` (an example, a sweep run, a model command).
type Job struct {
	// ID names the job in progress lines and errors, e.g. cfg-0003-r1.
	ID string
	// Label follows the ID in progress lines (a sweep's parameters).
	Label string
	// Dir is the job's own directory; RunBatch removes it before it
	// (re)runs the job.
	Dir string
	// Estimate is how long the job is expected to take; the ETA weighs the
	// jobs left by it. Zero for every job falls back to the mean time of
	// the jobs done.
	Estimate time.Duration
	// Run carries the job out into dir. It returns an error when the job
	// failed, ctx's error when it was interrupted.
	Run func(ctx context.Context, dir string) error
	// Complete reports whether dir holds the job's finished result; nil
	// means a run directory whose summary.json says complete.
	Complete func(dir string) bool
	// Failed records a failed job's reason in dir; nil writes failed.txt.
	Failed func(dir string, reason error) error
}

// BatchOptions say how to run a batch.
type BatchOptions struct {
	// Resume skips complete jobs and redoes the others; without it no job
	// directory may exist yet.
	Resume bool
	// Progress receives one line per job: i of n, its id and label, ETA.
	Progress io.Writer
	// Now is the clock of the ETA; nil is time.Now.
	Now func() time.Time
}

// BatchResult counts what RunBatch did.
type BatchResult struct {
	Ran, Skipped, Failed int
}

// RunBatch runs jobs in order. A complete job is skipped when resuming; a
// job that fails is recorded as failed (its Failed, or failed.txt) and the
// batch goes on. It returns ErrExists, before running anything, when a job
// directory exists and opt.Resume is not set, and ctx's error (wrapped,
// saying that --resume continues) when interrupted; what finished is kept.
func RunBatch(ctx context.Context, jobs []Job, opt BatchOptions) (BatchResult, error) {
	var res BatchResult
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	if !opt.Resume {
		if err := CheckFresh(jobs); err != nil {
			return res, err
		}
	}
	// The jobs a resumed batch will skip are not in the ETA.
	var remaining time.Duration
	skip := make([]bool, len(jobs))
	for i, j := range jobs {
		skip[i] = opt.Resume && done(j)
		if !skip[i] {
			remaining += j.Estimate
		}
	}
	var spent, spentCalibrating, estimatedDone time.Duration
	for i, j := range jobs {
		label := strings.TrimSpace(j.ID + " " + j.Label)
		if skip[i] {
			res.Skipped++
			progressf(opt.Progress, "[%d/%d] %s: complete, skipped", i+1, len(jobs), label)
			continue
		}
		// An incomplete or failed job is redone from nothing.
		if err := os.RemoveAll(j.Dir); err != nil {
			return res, err
		}
		progressf(opt.Progress, "[%d/%d] %s (ETA %s)", i+1, len(jobs), label, eta(spent, spentCalibrating, estimatedDone, remaining, res.Ran, len(jobs)-i))
		start := now()
		err := j.Run(ctx, j.Dir)
		took := now().Sub(start)
		spent += took
		if j.Estimate >= minCalibration {
			spentCalibrating += took
			estimatedDone += j.Estimate
		}
		remaining -= j.Estimate
		res.Ran++
		if ctx.Err() != nil {
			return res, fmt.Errorf("interrupted at %s; finished runs are kept, the same command with --resume continues: %w", j.ID, ctx.Err())
		}
		if err != nil {
			res.Failed++
			progressf(opt.Progress, "[%d/%d] %s failed: %v", i+1, len(jobs), label, err)
			mark := j.Failed
			if mark == nil {
				mark = writeFailed
			}
			if err := mark(j.Dir, err); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// CheckFresh returns ErrExists, naming the directory, when a job's
// directory exists already.
func CheckFresh(jobs []Job) error {
	for _, j := range jobs {
		if _, err := os.Stat(j.Dir); err == nil {
			return fmt.Errorf("%w (%s): pass --resume to finish it, or choose another -o", ErrExists, j.Dir)
		}
	}
	return nil
}

func done(j Job) bool {
	if j.Complete != nil {
		return j.Complete(j.Dir)
	}
	return Complete(j.Dir)
}

// minCalibration is the shortest estimate a job must have for its time to
// scale the ETA: a model command estimated at a second takes milliseconds,
// and would make every run after it look instant.
const minCalibration = 5 * time.Second

// eta is the time the jobs left will take: their estimates scaled by how
// long the jobs done took against theirs (jobs estimated at minCalibration
// or more), the estimates themselves ("~") before any such job, or the
// mean time of the jobs done when there are no estimates. "–" before the
// first job without estimates.
func eta(spent, spentCalibrating, estimatedDone, remaining time.Duration, ran, left int) string {
	if ran == 0 {
		if remaining > 0 {
			return "~" + remaining.Round(time.Second).String()
		}
		return "–"
	}
	switch {
	case estimatedDone > 0 && remaining > 0:
		return time.Duration(float64(remaining) * float64(spentCalibrating) / float64(estimatedDone)).Round(time.Second).String()
	case remaining > 0:
		return "~" + remaining.Round(time.Second).String()
	}
	return (spent / time.Duration(ran) * time.Duration(left)).Round(time.Second).String()
}

// writeFailed leaves dir with the reason in failed.txt.
func writeFailed(dir string, reason error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	msg := strings.ReplaceAll(reason.Error(), "\n", "; ")
	return os.WriteFile(filepath.Join(dir, FailedFile), []byte(msg+"\n"), 0o644)
}

// FailedReason is the reason a failed job left in dir (failed.txt), and
// whether there is one.
func FailedReason(dir string) (string, bool) {
	msg, err := os.ReadFile(filepath.Join(dir, FailedFile))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(msg)), true
}
