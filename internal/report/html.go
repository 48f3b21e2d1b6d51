package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
)

type renderedFigure struct {
	*figure
	SVG  string // inline SVG document
	Link string // path of the PNG/SVG files without extension, relative to the report
}

// table is a pre-formatted table: every cell is text, "–" where undefined.
type table struct {
	Caption string
	Head    []string
	Rows    [][]string
	Status  []string // per row, optional CSS class ("pass", "fail")
}

type page struct {
	Title    string
	Runs     []*run
	Notes    []string
	RunInfo  table
	Checks   *table
	Overall  *table // runs side by side; nil for one run
	PerRun   []table
	Baseline table
	Faults   *table
	// Behaviour and Macro compare many runs as Brown and Patterson (2000) do (behaviour.go).
	Behaviour *table
	Macro     *table
	Figures   []renderedFigure
}

// writeHTML renders the page; warnings are the comparability warnings,
// shown first among the notes.
func writeHTML(w io.Writer, runs []*run, figs []renderedFigure, warnings []string) error {
	pg := page{Runs: runs, Figures: figs}
	for _, wn := range warnings {
		pg.Notes = append(pg.Notes, "Not like for like: "+wn+".")
	}
	var labels []string
	for _, r := range runs {
		labels = append(labels, r.Label)
		for _, n := range r.Notes {
			pg.Notes = append(pg.Notes, r.Label+": "+n)
		}
	}
	pg.Title = "faultbench report: " + strings.Join(labels, " vs ")
	pg.RunInfo = runInfoTable(runs)
	pg.Checks = thresholdTable(runs)
	if len(runs) > 1 {
		t := overallTable(runs)
		pg.Overall = &t
	}
	for _, r := range runs {
		pg.PerRun = append(pg.PerRun, periodTable(r))
		if t, ok := checkTable(r); ok {
			pg.PerRun = append(pg.PerRun, t)
		}
	}
	pg.Baseline = baselineTable(runs)
	pg.Faults = faultTable(runs)
	pg.Behaviour, pg.Macro = behaviourTable(runs), macroTable(runs)
	return pageTemplate.Execute(w, pg)
}

// Formatting: NaN and missing values are "–" everywhere.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func secs(v analysis.Float) string { return fmtSeconds(float64(v)) }

type metricRow struct {
	Name string
	Get  func(m *analysis.Metrics) string
}

var metricRows = func() []metricRow {
	rows := []metricRow{
		{"attempts", func(m *analysis.Metrics) string { return num(float64(m.Attempts)) }},
	}
	for _, o := range record.Outcomes() {
		name := o.String()
		rows = append(rows, metricRow{name, func(m *analysis.Metrics) string {
			if v, ok := m.Outcomes[name]; ok {
				return num(float64(v))
			}
			return "–"
		}})
	}
	fl := func(name string, get func(*analysis.Metrics) analysis.Float, s bool) metricRow {
		return metricRow{name, func(m *analysis.Metrics) string {
			if s {
				return secs(get(m))
			}
			return num(float64(get(m)))
		}}
	}
	rows = append(rows,
		metricRow{"throughput total (ok)", func(m *analysis.Metrics) string { return num(float64(m.ThroughputTotal)) }},
		fl("throughput (ok/s)", func(m *analysis.Metrics) analysis.Float { return m.ThroughputMeanPerS }, false),
		fl("offered (attempts/s)", func(m *analysis.Metrics) analysis.Float { return m.OfferedPerS }, false),
		fl("latency total", func(m *analysis.Metrics) analysis.Float { return m.LatencyTotalS }, true),
		fl("latency mean", func(m *analysis.Metrics) analysis.Float { return m.LatencyMeanS }, true),
		fl("latency trimmed mean (95%)", func(m *analysis.Metrics) analysis.Float { return m.LatencyTrimmedMeanS }, true),
		fl("latency stddev", func(m *analysis.Metrics) analysis.Float { return m.LatencyStddevS }, true),
		fl("latency p50", func(m *analysis.Metrics) analysis.Float { return m.LatencyP50S }, true),
		fl("latency p90", func(m *analysis.Metrics) analysis.Float { return m.LatencyP90S }, true),
		fl("latency p99", func(m *analysis.Metrics) analysis.Float { return m.LatencyP99S }, true),
		fl("latency p99.9", func(m *analysis.Metrics) analysis.Float { return m.LatencyP999S }, true),
		fl("latency max", func(m *analysis.Metrics) analysis.Float { return m.LatencyMaxS }, true),
		fl("latency max, top 1% trimmed", func(m *analysis.Metrics) analysis.Float { return m.LatencyMaxTrimmed1pc }, true),
		fl("3σ outliers (fraction)", func(m *analysis.Metrics) analysis.Float { return m.Outliers3SigmaFrac }, false),
		fl("goodput", func(m *analysis.Metrics) analysis.Float { return m.Goodput }, false),
		fl("punctuality", func(m *analysis.Metrics) analysis.Float { return m.Punctuality }, false),
		fl("yield", func(m *analysis.Metrics) analysis.Float { return m.Yield }, false),
		fl("demerits", func(m *analysis.Metrics) analysis.Float { return m.Demerits }, false),
	)
	// The generator's own account, apart from the service's figures: a
	// summary written before it existed has no arrivals, and shows "–".
	gen := func(name string, get func(*analysis.Metrics) string) metricRow {
		return metricRow{name, func(m *analysis.Metrics) string {
			if m.Arrivals == 0 && m.Attempts > 0 {
				return "–"
			}
			return get(m)
		}}
	}
	rows = append(rows,
		gen("generator: arrivals scheduled", func(m *analysis.Metrics) string { return num(float64(m.Arrivals)) }),
		gen("generator: refused (not sent)", func(m *analysis.Metrics) string { return num(float64(m.GenRefused)) }),
		gen("generator: cut short", func(m *analysis.Metrics) string { return num(float64(m.CutShort)) }),
		gen("generator: send lag p99", func(m *analysis.Metrics) string { return secs(m.SendLagP99S) }),
		gen("generator: send lag max", func(m *analysis.Metrics) string { return secs(m.SendLagMaxS) }),
		gen("windows not a valid measurement", func(m *analysis.Metrics) string { return num(float64(m.InvalidWindows)) }),
	)
	for _, t := range pExceedKeys {
		key := t.key
		rows = append(rows, metricRow{"P(latency > " + key + " s)", func(m *analysis.Metrics) string {
			if v, ok := m.PExceed[key]; ok {
				return num(float64(v))
			}
			return "–"
		}})
	}
	return rows
}()

func metricsTable(caption string, head []string, ms []*analysis.Metrics) table {
	t := table{Caption: caption, Head: append([]string{"metric"}, head...)}
	for _, row := range metricRows {
		cells := []string{row.Name}
		for _, m := range ms {
			if m == nil {
				cells = append(cells, "–")
			} else {
				cells = append(cells, row.Get(m))
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

func periodTable(r *run) table {
	var head []string
	var ms []*analysis.Metrics
	for _, p := range r.Periods {
		m := r.metrics(p.Name)
		if m == nil && p.Name == periodFailure {
			continue
		}
		label := p.Name
		if p.Name != periodOverall && m != nil {
			label += fmt.Sprintf(" (%g–%g s)", m.StartS, m.EndS)
		}
		head, ms = append(head, label), append(ms, m)
	}
	return metricsTable(r.Label+": metrics per period", head, ms)
}

func overallTable(runs []*run) table {
	var head []string
	var ms []*analysis.Metrics
	for _, r := range runs {
		head, ms = append(head, r.Label), append(ms, &r.Summary.Overall)
	}
	return metricsTable("Whole run, side by side", head, ms)
}

func runInfoTable(runs []*run) table {
	t := table{Caption: "Runs", Head: []string{""}}
	rows := [][]string{{"directory"}, {"name"}, {"system"}, {"workload"}, {"duration"}, {"attempts"}, {"seed"}, {"window"}, {"complete"}, {"faults"},
		{"schema"}, {"made by"}, {"run id"}, {"started (UTC)"}, {"host"}}
	for _, r := range runs {
		t.Head = append(t.Head, r.Label)
		s := r.Summary
		system, workload := "–", "–"
		if sc := r.Scenario; sc != nil {
			system = strings.TrimSpace(sc.Cluster.System+" "+sc.Cluster.Mode) + fmt.Sprintf(", %d nodes", sc.Cluster.Nodes)
			workload = fmt.Sprintf("%s %g/s %s, %d clients", sc.Workload.Driver, sc.Workload.Rate, sc.Workload.Arrivals, sc.Workload.Clients)
		}
		seed := "–"
		if r.Scenario != nil || s.Run.Seed != 0 {
			seed = strconv.FormatInt(s.Run.Seed, 10)
		}
		var faults []string
		for _, f := range r.Faults {
			faults = append(faults, fmt.Sprintf("%s at %.1f s", f.label(), f.InjectS))
		}
		if len(faults) == 0 {
			faults = []string{"none"}
		}
		vals := []string{filepath.Base(filepath.Clean(r.Dir)), r.Label, system, workload, fmtSeconds(r.EndS), num(float64(s.Run.Attempts)), seed,
			fmtSeconds(r.WindowS), strconv.FormatBool(s.Complete), strings.Join(faults, "; ")}
		vals = append(vals, provenanceCells(s)...)
		for i, v := range vals {
			rows[i] = append(rows[i], v)
		}
	}
	// What ran the nodes (docker: the engine, images and containers), in
	// its own row where some run says: older records and other tools'
	// do not.
	if slices.ContainsFunc(runs, func(r *run) bool { return r.Summary.Provenance != nil && r.Summary.Provenance.Testbed != nil }) {
		row := []string{"testbed"}
		for _, r := range runs {
			row = append(row, testbedCell(r.Summary.Provenance))
		}
		rows = append(rows, row)
	}
	t.Rows = rows
	return t
}

// testbedCell says which backend ran the nodes and, for containers, each
// node's container and image.
func testbedCell(p *provenance.Info) string {
	if p == nil || p.Testbed == nil {
		return "–"
	}
	tb := p.Testbed
	parts := []string{strings.TrimSpace(tb.Backend + " " + tb.Detail)}
	for _, n := range tb.Nodes {
		part := fmt.Sprintf("node %d: %s (%s), image %s (%s)", n.Node, n.Container, shortHex(n.ContainerID), n.Image, shortHex(n.ImageID))
		if n.RestartPolicy != "" {
			part += ", restart " + n.RestartPolicy
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func shortHex(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return id[:min(12, len(id))]
}

// provenanceCells are the run table's schema, made-by, run id, start and
// host cells: what made the record, "–" where it does not say (schema 1).
func provenanceCells(s *analysis.Summary) []string {
	schema := fmt.Sprintf("summary %d", s.SchemaVersion)
	p := s.Provenance
	if p == nil {
		return []string{schema + ", record 1", "–", "–", "–", "–"}
	}
	made := p.FaultbenchVersion
	if c := p.Commit; c != "" {
		made += " " + c[:min(len(c), 12)]
		if p.Modified {
			made += "+modified"
		}
	}
	host := fmt.Sprintf("%s, %d cores", orDash(p.Host), p.Cores)
	if len(p.LoadAvgStart) == 3 {
		host += fmt.Sprintf(", load %.2f %.2f %.2f", p.LoadAvgStart[0], p.LoadAvgStart[1], p.LoadAvgStart[2])
	}
	return []string{fmt.Sprintf("%s, record %d", schema, p.SchemaVersion), made, orDash(p.RunID), orDash(p.StartedUTC), host}
}

func thresholdTable(runs []*run) *table {
	t := &table{Caption: "Thresholds", Head: []string{"run", "threshold", "value", "result"}}
	for _, r := range runs {
		for _, th := range r.Summary.Thresholds {
			res, class := "pass", "pass"
			if !th.Passed {
				res, class = "FAIL", "fail"
			}
			t.Rows = append(t.Rows, []string{r.Label, th.Expr, num(float64(th.Value)), res})
			t.Status = append(t.Status, class)
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

func baselineTable(runs []*run) table {
	t := table{Caption: "Baseline band and deviations", Head: []string{"run", "source", "windows", "mean (ok/s)", "σ", "band (99%)", "ideal latency", "deviations", "longest", "deepest (ok/s)", "area (requests)"}}
	for _, r := range runs {
		b := r.Summary.Baseline
		if b == nil {
			t.Rows = append(t.Rows, []string{r.Label, "none", "–", "–", "–", "–", "–", num(float64(len(r.Summary.Deviations))), "–", "–", "–"})
			continue
		}
		var longest, deepest, area float64
		for _, d := range r.Summary.Deviations {
			longest, deepest, area = math.Max(longest, d.LengthS), math.Max(deepest, d.Depth), area+d.Area
		}
		if len(r.Summary.Deviations) == 0 {
			longest, deepest, area = math.NaN(), math.NaN(), math.NaN()
		}
		t.Rows = append(t.Rows, []string{r.Label, b.Source, num(float64(b.Windows)), num(b.Mean), num(b.Stddev),
			num(b.Low) + " – " + num(b.High), secs(b.LatencyMeanS), num(float64(len(r.Summary.Deviations))), fmtSeconds(longest), num(deepest), num(area)})
	}
	return t
}

func faultTable(runs []*run) *table {
	t := &table{Caption: "Faults: fault duration vs failure duration, behaviour class and stages A–G (duration s @ ok/s)",
		Head: append([]string{"run", "fault", "node", "inject", "clear", "fault duration", "failure duration", "class"}, stageNames...)}
	for _, r := range runs {
		for _, f := range r.Summary.Faults {
			node := "–"
			if f.Node > 0 {
				node = strconv.Itoa(f.Node)
			}
			kind := f.Type
			if f.Unplanned() {
				kind += " (not injected: the node's application exited on its own)"
			}
			row := []string{r.Label, kind, node, fmtSeconds(f.InjectS), secs(f.ClearS), secs(f.FaultDurationS), secs(f.FailureDurationS), orDash(f.Class)}
			for _, n := range stageNames {
				st, ok := f.Stages[n]
				switch {
				case !ok:
					row = append(row, "–")
				case st.DurationS == 0:
					row = append(row, "0")
				default:
					cell := num(st.DurationS) + " @ " + num(float64(st.Throughput))
					if !st.Measured {
						cell += " (supplied)"
					}
					row = append(row, cell)
				}
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"safe":       func(s string) template.HTML { return template.HTML(s) },
	"styleSheet": func() template.CSS { return template.CSS(styleSheet) },
	"status": func(t table, i int) string {
		if i < len(t.Status) {
			return t.Status[i]
		}
		return ""
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="faultbench report">
<title>{{.Title}}</title>
<style>
{{styleSheet}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{- if .Notes}}
<div class="notes"><p><b>Notes</b></p><ul>
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul></div>
{{- end}}
<h2 id="runs">Runs</h2>
{{template "table" .RunInfo}}
{{- with .Checks}}
<h2 id="thresholds">Thresholds</h2>
{{template "table" .}}
{{- end}}
{{- range $i, $f := .Figures}}{{if eq $i 0}}
<h2 id="{{$f.Name}}">{{$f.Title}}</h2>
{{template "figure" $f}}
{{- end}}{{end}}
<h2 id="metrics">Metrics</h2>
{{- with .Overall}}
{{template "table" .}}
{{- end}}
{{- range .PerRun}}
{{template "table" .}}
{{- end}}
{{template "table" .Baseline}}
{{- with .Faults}}
<h2 id="faults">Faults</h2>
{{template "table" .}}
{{- end}}
{{- if or .Behaviour .Macro}}
<h2 id="behaviour">Behaviour across runs</h2>
{{- with .Behaviour}}
{{template "table" .}}
{{- end}}
{{- with .Macro}}
{{template "table" .}}
{{- end}}
{{- end}}
{{- range $i, $f := .Figures}}{{if gt $i 0}}
<h2 id="{{$f.Name}}">{{$f.Title}}</h2>
{{template "figure" $f}}
{{- end}}{{end}}
<h2 id="scenarios">Scenarios</h2>
{{- range .Runs}}
<details><summary>{{.Label}}: scenario.yaml</summary>
{{- if .YAML}}
<pre>{{.YAML}}</pre>
{{- else}}
<p>No scenario.yaml in this results directory.</p>
{{- end}}
</details>
{{- end}}
</body>
</html>
{{define "table"}}<div class="wide"><table>
<caption>{{.Caption}}</caption>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- $t := .}}
{{- range $i, $row := .Rows}}
<tr{{with status $t $i}} class="{{.}}"{{end}}>{{range $row}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>{{end}}
{{define "figure"}}<figure>
{{safe .SVG}}
<figcaption>{{.Caption}} Files: <a href="{{.Link}}.png">PNG</a>, <a href="{{.Link}}.svg">SVG</a>.</figcaption>
</figure>{{end}}
`))

// styleSheet is the reports' CSS, shared by the run report and WriteDoc.
const styleSheet = `body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
caption{text-align:left;font-weight:bold;padding:.3em 0}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
thead th{background:#f3f3f3}
tr.pass td:last-child{color:#006d4f;font-weight:bold}
tr.fail td:last-child{color:#b34700;font-weight:bold}
figure{margin:1em 0 2em}figure svg{width:100%;height:auto}
figcaption{font-size:.85em;color:#444}
.notes{background:#fff8e5;border-left:4px solid #e69f00;padding:.5em 1em}
pre{background:#f6f6f6;padding:.8em;overflow:auto;font-size:.8em}
.wide{overflow-x:auto}
`
