package reproduce

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// committedRun is the run docs/papers.md quotes ("The committed run").
const committedRun = "docs/results/reproduce"

// TestCommittedRunIsItsTable: the committed reproduce.json is what the
// committed runs give today. Judging the runs under docs/results/reproduce
// again yields, claim by claim, the verdict, measured text, note and reason the
// committed table shows, so a claim edited without rewriting the table,
// or a table edited by hand, fails here; and docs/papers.md quotes the
// table's counts as `reproduce` prints them.
func TestCommittedRunIsItsTable(t *testing.T) {
	dir := filepath.Join(repoRoot, committedRun)
	data, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if os.IsNotExist(err) {
		t.Skipf("no committed run in %s", committedRun)
	}
	if err != nil {
		t.Fatal(err)
	}
	var committed Report
	if err := json.Unmarshal(data, &committed); err != nil {
		t.Fatalf("%s/%s: %v", committedRun, JSONFile, err)
	}
	papers, err := Papers()
	if err != nil {
		t.Fatal(err)
	}
	// Judged on a copy: judging a sweep rewrites its sweep.csv and
	// sweep.json, and a test leaves the tree as it found it.
	copied := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	now, err := Evaluate(papers, copied)
	if err != nil {
		t.Fatal(err)
	}
	const remedy = "rewrite it: faultbench reproduce all --table-only -o " + committedRun
	if len(now.Papers) != len(committed.Papers) {
		t.Fatalf("%s/%s has %d papers, the registry %d: %s", committedRun, JSONFile, len(committed.Papers), len(now.Papers), remedy)
	}
	for i, p := range now.Papers {
		was := committed.Papers[i]
		if p.Key != was.Key || len(p.Claims) != len(was.Claims) {
			t.Errorf("%s: the committed table has %s with %d claims, the registry %d: %s", p.Key, was.Key, len(was.Claims), len(p.Claims), remedy)
			continue
		}
		for j, c := range p.Claims {
			w := was.Claims[j]
			if c.Reason != w.Reason {
				t.Errorf("%s %s: the committed table gives the reason %q, the registry %q: %s", p.Key, c.ID, w.Reason, c.Reason, remedy)
			}
			if c.ID != w.ID || c.Verdict != w.Verdict || measuredText(c) != measuredText(w) || c.Note != w.Note {
				t.Errorf("%s %s: the committed table says %s %q (%s), the runs give %s %q (%s): %s",
					p.Key, c.ID, w.Verdict, measuredText(w), w.Note, c.Verdict, measuredText(c), c.Note, remedy)
			}
		}
	}

	var counts bytes.Buffer
	if err := committed.WriteText(&counts); err != nil {
		t.Fatal(err)
	}
	doc := readDoc(t, "docs/papers.md")
	for _, line := range strings.Split(strings.TrimSpace(counts.String()), "\n") {
		if !strings.Contains(doc, line) {
			t.Errorf("docs/papers.md does not quote the committed table's line\n\t%s\n(paste the output of the --table-only command above)", line)
		}
	}
}

func measuredText(c ClaimReport) string {
	if c.Measured == nil {
		return ""
	}
	return c.Measured.Text
}
