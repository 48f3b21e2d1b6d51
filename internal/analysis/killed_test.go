package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/record"
)

// writeSegment writes reqs as the sealed segment seq of dir's record.
func writeSegment(t testing.TB, dir string, seq int, reqs []record.Request) {
	t.Helper()
	seg := filepath.Join(dir, record.SegmentDir)
	if err := os.MkdirAll(seg, 0o755); err != nil {
		t.Fatal(err)
	}
	pw, err := record.CreateParquet(filepath.Join(seg, fmt.Sprintf("part-%05d.parquet", seq)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := pw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeKilledRun reads what a controller killed with SIGKILL leaves:
// sealed segments, a torn in-progress one, events without run.end and no
// summary. Every sealed request counts and the summary says incomplete,
// even when the caller believes the run complete.
func TestAnalyzeKilledRun(t *testing.T) {
	dir := t.TempDir()
	var all []record.Request
	for seq := 0; seq < 3; seq++ {
		var reqs []record.Request
		for i := 0; i < 200; i++ {
			reqs = append(reqs, record.Request{StartS: float64(seq*200+i) * 0.01, LatencyS: 0.002, Outcome: record.OK, Node: 1 + i%2, Target: "/p/1"})
		}
		writeSegment(t, dir, seq, reqs)
		all = append(all, reqs...)
	}
	// The segment being written when the kill came: no footer.
	if err := os.WriteFile(filepath.Join(dir, record.SegmentDir, ".part-00003.parquet.inprogress"), []byte("PAR1\x00\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	events := `{"t_s":0,"kind":"phase.start","detail":"all"}` + "\n" + `{"t_s":2.5,"kind":"fault.inject","node":2,"fault":"app-crash","id":1}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, record.EventsFile), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Analyze(dir, Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Run.Attempts != int64(len(all)) {
		t.Fatalf("%d attempts analysed, %d sealed", sum.Run.Attempts, len(all))
	}
	if sum.Complete || !strings.Contains(sum.IncompleteReason, "killed") {
		t.Fatalf("complete=%v reason %q; want incomplete because the run was killed", sum.Complete, sum.IncompleteReason)
	}
	if err := Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil || back.Complete || back.IncompleteReason != sum.IncompleteReason {
		t.Fatalf("summary.json read back: %+v, %v", back, err)
	}
}
