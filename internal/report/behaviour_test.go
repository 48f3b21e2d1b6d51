package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/record"
)

// raidRun writes a synthetic results directory of a raid run: the small
// synthetic record, with a raid scenario whose faults are given, the
// summary's first fault of class class, and extra events appended.
func raidRun(t *testing.T, dir, name, policy, reconstruction, faults, class string, extra ...record.Event) {
	t.Helper()
	s := small
	s.Name = name
	s.write(t, dir)
	sc := fmt.Sprintf(`name: %s
seed: 1
cluster:
  system: raid
  nodes: 1
  options: {transient_policy: %q, reconstruction: %s}
workload: {rate: 20, window: 5s, trace: "zipf:100:1.0"}
phases:
  - {name: warmup, duration: 10s}
  - {name: fault, duration: 15s}
  - {name: recovery, duration: 10s}
  - {name: post, duration: 5s}
faults:
%s`, name, policy, reconstruction, faults)
	if err := os.WriteFile(filepath.Join(dir, record.ScenarioFile), []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, record.SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum analysis.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	sum.Run.Name = name
	sum.Faults[0].Class = class
	if b, err = json.Marshal(sum); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(extra) > 0 {
		f, err := os.OpenFile(filepath.Join(dir, record.EventsFile), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range extra {
			b, _ := json.Marshal(e)
			f.Write(append(b, '\n'))
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

var behaviourSection = regexp.MustCompile(`(?s)<h2 id="behaviour">.*?</table></div>\n(?:<div class="wide">.*?</table></div>\n)?`)

// TestBehaviourTables: six single-fault runs (three faults, two policies,
// one cell run twice, one left out) and two multi-fault runs give Brown and Patterson's (2000)
// Table 1 and the §4.2 trade-off, on stdout and in the HTML.
func TestBehaviourTables(t *testing.T) {
	root := t.TempDir()
	sticky := func(typ string) string {
		return fmt.Sprintf("  - {type: %s, node: 1, disk: 2, at: 10s, mode: sticky}\n", typ)
	}
	transient := func(typ string) string {
		return fmt.Sprintf("  - {type: %s, node: 1, disk: 2, at: 10s, duration: 5s}\n", typ)
	}
	var dirs []string
	micro := []struct{ name, policy, faults, class string }{
		{"remove-paranoid", "paranoid", sticky("disk-remove"), "C-1"},
		{"remove-tolerant", "tolerant", sticky("disk-remove"), "C-2"},
		{"read-paranoid", "paranoid", transient("disk-read-correctable"), "C-1"},
		{"read-tolerant", "tolerant", transient("disk-read-correctable"), "A"},
		{"read-tolerant-again", "tolerant", transient("disk-read-correctable"), "A"},
		{"hang-paranoid", "paranoid", sticky("disk-hang-read"), "D"},
	}
	for _, m := range micro {
		dir := filepath.Join(root, m.name)
		raidRun(t, dir, m.name, m.policy, "low", m.faults, m.class)
		dirs = append(dirs, dir)
	}
	two := sticky("disk-power-fail") + "  - {type: disk-power-fail, node: 1, disk: 5, at: 20s, mode: sticky}\n"
	slow := filepath.Join(root, "macro-low")
	raidRun(t, slow, "macro-low", "paranoid", "low", two, "C-1",
		record.Event{TS: 11, Kind: "system.inject", Node: 2, Fault: "disk-power-fail", ID: 2},
		record.Event{TS: 11, Kind: "fault.inject", Node: 2, Fault: "disk-power-fail", ID: 2},
		record.Event{TS: 11.5, Kind: "system.raid.reconstruction.started", Node: 1},
		record.Event{TS: 31.5, Kind: "system.raid.reconstruction.finished", Node: 1},
		record.Event{TS: 33, Kind: "system.raid.reconstruction.started", Node: 1}) // still running at the end (40 s)
	fast := filepath.Join(root, "macro-high")
	raidRun(t, fast, "macro-high", "tolerant", "high", two, "C-2",
		record.Event{TS: 11, Kind: "fault.inject", Node: 2, Fault: "disk-power-fail", ID: 2})
	dirs = append(dirs, slow, fast)

	// The tables on loaded runs, without drawing figures (slow under -race).
	var runs []*run
	for _, d := range dirs {
		r, err := loadRun(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	uniqueLabels(runs)
	var text bytes.Buffer
	if err := writeText(&text, behaviourTable(runs), macroTable(runs)); err != nil {
		t.Fatal(err)
	}
	golden(t, "behaviour.txt", text.Bytes())
	var html bytes.Buffer
	if err := writeHTML(&html, runs, nil, nil); err != nil {
		t.Fatal(err)
	}
	section := behaviourSection.Find(html.Bytes())
	if section == nil {
		t.Fatal("report lacks the behaviour section")
	}
	golden(t, "behaviour.html", section)

	// One run, or runs of a single policy, get no behaviour table.
	if tb := behaviourTable(runs[:1]); tb != nil {
		t.Errorf("a single run has a behaviour table: %+v", tb)
	}
	if tb := behaviourTable([]*run{runs[0], runs[2], runs[5]}); tb != nil {
		t.Errorf("runs of one policy have a behaviour table: %+v", tb)
	}
	if tb := macroTable(runs[6:7]); tb != nil {
		t.Errorf("a single multi-fault run has a macro table: %+v", tb)
	}

	// faultbench report: WriteText prints the tables and renders them.
	text.Reset()
	out := filepath.Join(root, "two.html")
	if err := WriteText([]string{dirs[0], dirs[3]}, out, &text); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "disk-remove, sticky               C-1       –") || !bytes.Contains(page, []byte(`<h2 id="behaviour">`)) {
		t.Errorf("two runs differing in fault and policy: printed\n%s\nand the page has the section: %v", text.String(), bytes.Contains(page, []byte(`id="behaviour"`)))
	}
	text.Reset()
	if err := writeText(&text, behaviourTable(runs[:1]), macroTable(runs[:1])); err != nil || text.Len() != 0 {
		t.Errorf("one run: %v, printed %q", err, text.String())
	}
}

// TestBehaviourToleratesMissingEvents: a multi-fault run without any
// system.raid event (another system, or an older run) has no
// reconstruction figures, and no baseline gives no drop.
func TestBehaviourToleratesMissingEvents(t *testing.T) {
	r := &run{Label: "x", Faults: make([]faultSpan, 2), Summary: &analysis.Summary{}, EndS: 100}
	if n, total, open := rebuilds(r); n != 0 || total != 0 || open {
		t.Errorf("rebuilds without events: %d %v %v", n, total, open)
	}
	tb := macroTable([]*run{r, {Label: "y"}})
	if tb == nil || len(tb.Rows) != 1 || tb.Rows[0][4] != "–" || tb.Rows[0][5] != "–" {
		t.Errorf("macro table %+v", tb)
	}
}
