package sweep

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// BenchmarkAnalyze measures the sweep analysis (ReadTable + Analyze) over
// runs of 100,000 requests each, one run per configuration, as a sweep of
// the paper's size would hold; b.N is the analysis count, the run count is
// FAULTBENCH_SWEEP_RUNS (default 10). It reports seconds per run analysed
// and the heap in use at the end of each analysis.
func BenchmarkAnalyze(b *testing.B) {
	runs := 10
	if v := os.Getenv("FAULTBENCH_SWEEP_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	const perRun = 100_000
	root := b.TempDir()
	var dirs []string
	for i := range runs {
		d := filepath.Join(root, RunID(i+1, 1))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		sc := fmt.Sprintf("name: b-%s\nseed: 1\nsweep: {name: b, config: %d, repetition: 1, params: [{key: workload.clients, value: \"%d\"}]}\n", RunID(i+1, 1), i+1, i%8)
		if err := os.WriteFile(filepath.Join(d, record.ScenarioFile), []byte(sc), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, record.SummaryFile), []byte(`{"complete": true, "overall": {"attempts": 100000, "throughput_mean_per_s": 1000}}`), 0o644); err != nil {
			b.Fatal(err)
		}
		w, err := record.CreateParquet(filepath.Join(d, record.RequestsFile))
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		for k := range perRun {
			if err := w.Write(record.Request{StartS: float64(k) / 1000, LatencyS: 0.001 * (1 + rng.ExpFloat64()), Outcome: record.OK, Node: 1, Target: "/p/1", Status: 200}); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	var ms runtime.MemStats
	b.ResetTimer()
	for b.Loop() {
		t, err := ReadTable(dirs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Analyze(t, AnalyzeOptions{}); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(runs), "s/run")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap")
}
