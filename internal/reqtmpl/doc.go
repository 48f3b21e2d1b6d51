// Package reqtmpl builds request text (paths, header values, bodies) from
// templates: parsed once when a scenario is validated, rendered once per
// request on the load generator's hot path without allocating.
//
// # Syntax
//
// A template is literal text with actions between {{ and }}:
//
//	{{user}}              the emulated user's number (Vars.User)
//	{{client}}            the client emulator's number (Vars.Client)
//	{{seq}}               the per-request counter (Vars.Seq)
//	{{key}}               the request's key: the one the driver set with
//	                      Vars.SetKey, or the one a {{key SPACE}} drew earlier
//	                      in the same request; 0 when neither happened
//	{{key uniform:N}}     draw the request's key uniformly from 0..N-1
//	{{key zipf:N:S}}      draw it from 0..N-1 with P(k) ∝ 1/(k+1)^S
//	                      (the first draw of a request sticks: every later
//	                      {{key ...}} or {{key}} of that request, in any
//	                      template rendered with the same Vars, gives it again)
//	{{rand N}}            a fresh uniform integer in 0..N-1
//	{{payload N}}         N random bytes from [A-Za-z0-9_-] (safe in JSON and URLs)
//	{{value}}             Vars.Value as is (a driver's versioned value)
//	{{"text"}}            a Go-quoted string literal, e.g. {{"{{"}} for a literal {{
//
// Any value may be piped through functions: {{user | base64}},
// {{payload 16 | json}}. A function alone opens a block that runs to
// {{end}} and applies to everything rendered inside it, which is how a
// composite is encoded:
//
//	{"key": "{{base64}}user-{{user}}-k{{key zipf:1000:1.1}}{{end}}"}
//
// Functions: base64 (standard, padded), json (the inside of a JSON string:
// quotes, backslashes and control characters escaped, invalid UTF-8
// replaced by U+FFFD), url (percent-encoding of everything but
// A-Za-z0-9-._~).
//
// # Errors
//
// Parse returns an *Error (wrapping ErrTemplate) with the 1-based line and
// column (in characters) of the offending action: an unknown variable or
// function, a bad argument, an unclosed {{ or block, a stray {{end}}.
// Callers that know where the template came from (a scenario key) add the
// file and line; the column is within the template text.
//
// # Concurrency and memory
//
// A *Template is immutable after Parse and may be rendered from many
// goroutines at once. Vars belong to one goroutine (one user or one
// request at a time). Render appends to dst and returns it, like
// strconv.Append*; with a dst of sufficient capacity it does not allocate
// (BenchmarkRender). Key spaces built by Parse (zipf tables, 8 bytes per
// key) are shared by every render.
//
// # Typical use
//
//	body, err := reqtmpl.Parse(`{"id":{{seq}},"data":"{{payload 1000}}"}`)
//	...
//	v := reqtmpl.Vars{User: 3, Rand: rand.New(rand.NewSource(seed))}
//	for {
//		v.Next()              // a new request: Seq+1, key forgotten
//		buf = body.Render(buf[:0], &v)
//		...
//	}
//
// A driver that must know the key (a read-your-writes checker) draws it
// itself with a KeySpace and calls Vars.SetKey before rendering.
package reqtmpl
