package reproduce

import (
	"testing"
)

// FuzzParse feeds arbitrary data files to Parse: it must return a paper or
// an error, never panic, and a paper it returns must be judgeable — every
// measured claim names an experiment and a run that exist, with a key
// path that parses or an event span.
func FuzzParse(f *testing.F) {
	// Small seeds: the fuzzer minimises every new input, and the real
	// data files (tens of kilobytes) would keep it minimising. The
	// registry's own files are checked whole by TestRegistryLoads.
	f.Add([]byte(goodPaper))
	f.Add([]byte("paper: x00\nclaims: [{id: a, published: [1, 2, 3]}]\n"))
	f.Add([]byte("paper: x00\nexperiments: [{id: e, model: [{id: m}]}]\nclaims: [{id: a, measure: {experiment: e, per: {experiment: e, per: {}}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "papers/fuzz.yaml")
		if err != nil {
			return
		}
		for _, c := range p.Claims {
			for m := c.Measure; m != nil; m = m.Per {
				e := p.Experiment(m.Experiment)
				if e == nil || !contains(e.RunIDs(), m.Run) {
					t.Fatalf("claim %s measures %s/%s, which does not exist", c.ID, m.Experiment, m.Run)
				}
				if m.Key != "" {
					if _, err := parsePath(m.Key); err != nil {
						t.Fatalf("claim %s: a key Parse accepted does not parse: %v", c.ID, err)
					}
				}
			}
			_ = c.Published.String()
			_ = c.ToleranceText()
		}
	})
}

// FuzzParsePath: any key either parses or is refused, and a parsed one
// can be looked up in any document without panicking.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"faults.0.class", "points[label=1/day].result.x", "a[b=c].d[e=f].g", "a..b", "[", "a]b", "0.1.2"} {
		f.Add(s)
	}
	doc, _ := decodeJSON([]byte(`{"a":[{"b":"c","d":[{"e":"f","g":1}]}],"faults":[{"class":"C-1"}],"0":{"1":2}}`))
	f.Fuzz(func(t *testing.T, key string) {
		if _, err := parsePath(key); err != nil {
			return
		}
		_, _ = lookupPath(doc, key)
	})
}
