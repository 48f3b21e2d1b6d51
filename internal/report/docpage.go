package report

import (
	"html/template"
	"io"
)

// Doc is a self-contained page of tables styled as the run report (no
// external assets), for commands whose result is tables rather than runs:
// `faultbench reproduce` writes its verdicts with it.
type Doc struct {
	Title    string
	Intro    []string // paragraphs
	Notes    []string // shown in the notes box
	Sections []DocSection
}

// DocSection is a heading with paragraphs and tables.
type DocSection struct {
	ID      string // anchor
	Heading string
	Intro   []string
	Tables  []DocTable
}

// DocTable is a table of text cells; a cell may link (relative links keep
// the page self-contained beside the directories it points into).
type DocTable struct {
	Caption string
	Head    []string
	Rows    []DocRow
}

// DocRow is one row; Class is a CSS class of the row.
type DocRow struct {
	Class string
	Cells []DocCell
}

// DocCell is one cell: text, and links shown after it.
type DocCell struct {
	Text  string
	Links []DocLink
	Class string
}

// DocLink is a link in a cell.
type DocLink struct {
	Text string
	Href string
}

// WriteDoc renders a Doc.
func WriteDoc(w io.Writer, d Doc) error { return docTemplate.Execute(w, d) }

var docTemplate = template.Must(template.New("doc").Funcs(template.FuncMap{
	"styleSheet": func() template.CSS { return template.CSS(styleSheet + docStyle) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="faultbench">
<title>{{.Title}}</title>
<style>
{{styleSheet}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{- range .Intro}}
<p>{{.}}</p>
{{- end}}
{{- if .Notes}}
<div class="notes"><p><b>Notes</b></p><ul>
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul></div>
{{- end}}
{{- range .Sections}}
<h2{{with .ID}} id="{{.}}"{{end}}>{{.Heading}}</h2>
{{- range .Intro}}
<p>{{.}}</p>
{{- end}}
{{- range .Tables}}
<div class="wide"><table>
{{- with .Caption}}
<caption>{{.}}</caption>
{{- end}}
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr{{with .Class}} class="{{.}}"{{end}}>{{range .Cells}}<td{{with .Class}} class="{{.}}"{{end}}>{{.Text}}{{range .Links}} <a href="{{.Href}}">{{.Text}}</a>{{end}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- end}}
{{- end}}
</body>
</html>
`))

// docStyle adds the verdict colours and left-aligned text columns.
const docStyle = `td.text{text-align:left}
td.agrees{color:#006d4f;font-weight:bold}td.close{color:#7a6a00;font-weight:bold}
td.differs{color:#b34700;font-weight:bold}td.failed{color:#b30000;font-weight:bold}
td.construction,td.unmeasured{color:#555;font-style:italic}
`
