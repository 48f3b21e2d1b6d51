package reproduce

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const repoRoot = "../.."

// normalize drops markdown emphasis and code marks and folds whitespace,
// so that a sentence reads the same in the data file and the doc.
func normalize(s string) string {
	s = strings.NewReplacer("*", "", "`", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

func readDoc(t *testing.T, doc string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(data)
}

// mdTable is a markdown table: its header cells and rows, with a blank
// leading cell carrying the value above it down (as docs/press.md's
// "| | ha |" rows do).
type mdTable struct {
	head []string
	rows [][]string
}

func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	line = strings.ReplaceAll(line, `\|`, "\x00")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = normalize(strings.ReplaceAll(c, "\x00", "|"))
	}
	return cells
}

var reSeparator = regexp.MustCompile(`^\|?\s*:?-{3,}`)

func parseTables(text string) []mdTable {
	var tables []mdTable
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "|") || !reSeparator.MatchString(strings.TrimSpace(lines[i+1])) {
			continue
		}
		t := mdTable{head: splitRow(lines[i])}
		var prev []string
		j := i + 2
		for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j++ {
			row := splitRow(lines[j])
			for k := range row {
				if row[k] != "" || k >= len(prev) || k > 1 {
					break
				}
				row[k] = prev[k]
			}
			t.rows = append(t.rows, row)
			prev = row
		}
		tables = append(tables, t)
		i = j
	}
	return tables
}

// cellNumber reads "30", "4,965", "99.8%", "7×", "9 s".
func cellNumber(s string) (float64, bool) {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	scale := 1.0
	switch {
	case strings.HasSuffix(s, "%"):
		s, scale = strings.TrimSuffix(s, "%"), 0.01
	case strings.HasSuffix(s, "×"):
		s = strings.TrimSuffix(s, "×")
	case strings.HasSuffix(s, " s"):
		s = strings.TrimSuffix(s, " s")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v * scale, err == nil
}

func sameNumber(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// quotedValueMatches says whether the text a doc writes is the published value.
func quotedValueMatches(p Published, written []string) bool {
	switch {
	case p.IsText:
		return len(written) == 1 && normalize(written[0]) == normalize(p.Text)
	case p.IsRange:
		var bounds []float64
		for _, b := range []float64{p.Lo, p.Hi} {
			if !math.IsInf(b, 0) {
				bounds = append(bounds, b)
			}
		}
		if len(written) != len(bounds) {
			return false
		}
		for i, w := range written {
			v, ok := cellNumber(w)
			if !ok || !sameNumber(v, bounds[i]) {
				return false
			}
		}
		return true
	}
	if len(written) != 1 {
		return false
	}
	v, ok := cellNumber(written[0])
	return ok && sameNumber(v, p.Num)
}

// TestPublishedValuesMatchTheDocs checks every published value that the
// docs quote against the text of the docs: a table cell (or one of its
// " / "-separated parts), or a quoted text holding the value.
func TestPublishedValuesMatchTheDocs(t *testing.T) {
	papers, err := Papers()
	if err != nil {
		t.Fatal(err)
	}
	quotes := 0
	for _, p := range papers {
		for _, c := range p.Claims {
			q := c.Quoted
			if q == nil {
				continue
			}
			quotes++
			doc := readDoc(t, q.Doc)
			where := p.File + ": claim " + c.ID
			if q.Text != "" {
				if !strings.Contains(normalize(doc), normalize(q.Text)) {
					t.Errorf("%s: %s does not contain %q", where, q.Doc, q.Text)
					continue
				}
				for _, v := range q.Values {
					if !strings.Contains(q.Text, v) {
						t.Errorf("%s: the quoted text %q does not hold %q", where, q.Text, v)
					}
				}
				if !quotedValueMatches(c.Published, q.Values) {
					t.Errorf("%s: the doc writes %q, the data file publishes %s", where, q.Values, c.Published)
				}
				continue
			}
			cell, ok := findCell(parseTables(doc), q)
			if !ok {
				t.Errorf("%s: %s has no table with column %q and row %q", where, q.Doc, q.Column, q.Row)
				continue
			}
			if q.Part != nil {
				parts := strings.Split(cell, " / ")
				if *q.Part >= len(parts) {
					t.Errorf("%s: cell %q has no part %d", where, cell, *q.Part)
					continue
				}
				cell = parts[*q.Part]
			}
			if !quotedValueMatches(c.Published, []string{cell}) {
				t.Errorf("%s: %s's table says %q (column %q, row %q), the data file publishes %s", where, q.Doc, cell, q.Column, q.Row, c.Published)
			}
		}
	}
	if quotes < 50 {
		t.Errorf("only %d quoted values checked: the docs' tables of published values should all be tied to the data", quotes)
	}
}

func findCell(tables []mdTable, q *Quote) (string, bool) {
	want := make([]string, len(q.Row))
	for i, r := range q.Row {
		want[i] = normalize(r)
	}
	for _, t := range tables {
		col := -1
		for i, h := range t.head {
			if h == normalize(q.Column) {
				col = i
			}
		}
		if col < 0 {
			continue
		}
	rows:
		for _, row := range t.rows {
			if len(row) <= col || len(row) < len(want) {
				continue
			}
			for i, w := range want {
				if row[i] != w {
					continue rows
				}
			}
			return row[col], true
		}
	}
	return "", false
}

// TestReasonsComeFromTheDocs: a claim's reason is a sentence (or a part
// of one) of the docs, so that the table's explanation is the docs' own.
func TestReasonsComeFromTheDocs(t *testing.T) {
	papers, err := Papers()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	var all strings.Builder
	for _, d := range docs {
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
		all.WriteString("\n")
	}
	text := normalize(all.String())
	for _, p := range papers {
		for _, c := range p.Claims {
			if c.Reason != "" && !strings.Contains(text, normalize(c.Reason)) {
				t.Errorf("%s: claim %s: reason %q is in no docs/*.md: quote the docs' own sentence, or add it to the docs", p.File, c.ID, c.Reason)
			}
		}
	}
}

// TestRegistryNamesExist: every example, sweep and model input the
// registry names is in the repository, and every paper is named where
// users look for it.
func TestRegistryNamesExist(t *testing.T) {
	papers, err := Papers()
	if err != nil {
		t.Fatal(err)
	}
	exists := func(where, p string) {
		if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
			t.Errorf("%s: %s does not exist", where, p)
		}
	}
	cli, papersDoc := readDoc(t, "docs/cli.md"), readDoc(t, "docs/papers.md")
	for _, p := range papers {
		if !strings.Contains(cli, p.Key) || !strings.Contains(papersDoc, "faultbench reproduce "+p.Key) {
			t.Errorf("%s is not named in docs/cli.md and as `faultbench reproduce %s` in docs/papers.md", p.Key, p.Key)
		}
		if !strings.Contains(papersDoc, "| "+p.Cite+" |") {
			t.Errorf("%s: cite %q is not a key of docs/papers.md's citation table", p.File, p.Cite)
		}
		if p.Docs != "" {
			exists(p.File, p.Docs)
		}
		for _, e := range p.Experiments {
			for _, x := range e.Examples {
				exists(p.File+": experiment "+e.ID, x)
			}
			if e.Sweep != "" {
				exists(p.File+": experiment "+e.ID, e.Sweep)
			}
			for _, m := range e.Model {
				for _, a := range m.Args {
					if strings.HasSuffix(a, ".yaml") {
						exists(p.File+": experiment "+e.ID+" model "+m.ID, a)
					}
				}
			}
		}
		for _, c := range p.Claims {
			if c.Quoted != nil {
				exists(p.File+": claim "+c.ID, c.Quoted.Doc)
			}
		}
	}
}
