package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/record"
)

// TestInterruptDuringStartUp: Ctrl-C before the load starts (here, before
// the cluster is even up) says "interrupted", not what the cancelled
// start-up happened to fail on.
func TestInterruptDuringStartUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "out")
	err := Run(ctx, []string{"run", writeScenario(t, tiny), "-o", dir, "--quiet"}, &out, &errb)
	t.Logf("err: %v", err)
	if err == nil || !strings.HasPrefix(err.Error(), "interrupted") || ExitCode(err) != ExitFailed {
		t.Fatalf("got %v (exit %d), want an error starting with \"interrupted\"", err, ExitCode(err))
	}
	if strings.Contains(err.Error(), "context canceled") {
		t.Errorf("the message leaks Go's context error: %v", err)
	}
}

// TestInterruptWhileWaitingForReady: Ctrl-C while the runner polls a node
// that never becomes ready.
func TestInterruptWhileWaitingForReady(t *testing.T) {
	body := `
name: never-ready
cluster: {system: command, nodes: 1, command: ["sleep", "60"], port: 18089, ready: /health}
workload: {rate: 10, trace: "zipf:10:1.0"}
phases: [{name: only, duration: 1s}]
`
	dir := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once start-up is under way: the scenario is written
		// before the first node starts. Bounded: at most 10 s.
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(filepath.Join(dir, record.ScenarioFile)); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	var out, errb bytes.Buffer
	err := Run(ctx, []string{"run", writeScenario(t, body), "-o", dir, "--quiet"}, &out, &errb)
	if err == nil || !strings.HasPrefix(err.Error(), "interrupted") || strings.Contains(err.Error(), "context") {
		t.Fatalf("got %v, want an error starting with \"interrupted\"", err)
	}
}
