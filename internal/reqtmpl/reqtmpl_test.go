package reqtmpl

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	cases := []struct{ src, want string }{
		{"plain /p/1", "plain /p/1"},
		{"", ""},
		{"/u/{{user}}/c/{{client}}/s/{{seq}}", "/u/7/c/2/s/41"},
		{"{{ user }}", "7"},
		{`{{"{{"}}user}}`, "{{user}}"},
		{`{{"a}}b"}}`, "a}}b"},
		{"{{value}}", "v1"},
		{"{{user | base64}}", "Nw=="},
		{`{{"a\"b\n" | json}}`, `a\"b\n`},
		{`{{"a b/é" | url}}`, "a%20b%2F%C3%A9"},
		{`{{base64}}k-{{user}}{{end}}`, base64.StdEncoding.EncodeToString([]byte("k-7"))},
		{`{{json}}{{base64}}x{{end}}"{{end}}`, `eA==\"`},
		{`{{"x" | base64 | base64}}`, base64.StdEncoding.EncodeToString([]byte("eA=="))},
		{"{{key}}", "0"},
		{`{{"\x01\u2028" | json}}`, `\u0001\u2028`},
		{`{{"\xff" | json}}`, `\ufffd`},
	}
	for _, c := range cases {
		tm, err := Parse(c.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.src, err)
			continue
		}
		v := Vars{User: 7, Client: 2, Seq: 41, Value: []byte("v1")}
		if got := tm.RenderString(&v); got != c.want {
			t.Errorf("Parse(%q).Render = %q, want %q", c.src, got, c.want)
		}
	}
}

func TestRenderAppendsAfterPrefix(t *testing.T) {
	// Filters must only rewrite what the node rendered, not what dst held.
	tm := MustParse(`{{"\"" | json}}|{{"x" | base64}}`)
	got := string(tm.Render([]byte(`pre"`), &Vars{}))
	if want := `pre"\"|eA==`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRandomValues(t *testing.T) {
	tm := MustParse(`{"k":{{key uniform:10}},"again":{{key zipf:10:1.1}},"bare":{{key}},"r":{{rand 5}},"p":"{{payload 25}}"}`)
	if !tm.Random() {
		t.Fatal("Random() = false for a template with draws")
	}
	v := Vars{Rand: rand.New(rand.NewSource(1))}
	seen := map[string]bool{}
	for range 200 {
		v.Next()
		var doc struct {
			K, Again, Bare, R int
			P                 string
		}
		out := tm.Render(nil, &v)
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("render %s is not JSON: %v", out, err)
		}
		if doc.K != doc.Again || doc.K != doc.Bare || doc.K < 0 || doc.K >= 10 {
			t.Fatalf("one request's keys differ or are out of range: %s", out)
		}
		if doc.R < 0 || doc.R >= 5 || !regexp.MustCompile(`^[A-Za-z0-9_-]{25}$`).MatchString(doc.P) {
			t.Fatalf("bad rand or payload: %s", out)
		}
		seen[string(rune('0'+doc.K))] = true
	}
	if len(seen) < 5 {
		t.Fatalf("200 draws over 10 keys hit only %d keys", len(seen))
	}
	v.Next()
	v.SetKey(12345)
	if got := MustParse("{{key zipf:10:1}}").RenderString(&v); got != "12345" {
		t.Fatalf("a key set by the driver must win over a draw, got %s", got)
	}
}

func TestSameSeedSameOutput(t *testing.T) {
	tm := MustParse("{{key zipf:1000:0.9}}-{{payload 40}}-{{rand 1000000}}")
	render := func() string {
		v := Vars{Rand: rand.New(rand.NewSource(42))}
		var b strings.Builder
		for range 50 {
			v.Next()
			b.Write(tm.Render(nil, &v))
		}
		return b.String()
	}
	if a, b := render(), render(); a != b {
		t.Fatal("the same seed rendered different text")
	}
}

func TestZipfSkew(t *testing.T) {
	ks, err := ParseKeySpace("zipf:100:1.2")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	var first, last int
	for range 20000 {
		switch ks.Draw(rng) {
		case 0:
			first++
		case 99:
			last++
		}
	}
	// P(0)/P(99) = 100^1.2 ≈ 251: key 0 must dominate by far.
	if first < 50*last || first == 0 {
		t.Fatalf("zipf not skewed: key 0 drawn %d times, key 99 %d times", first, last)
	}
}

func TestURLMatchesQueryEscape(t *testing.T) {
	in := "a b+c/d?e=f&g~h.i_j-k%é"
	got := MustParse(`{{url}}` + strings.ReplaceAll(in, "{", "") + `{{end}}`).RenderString(&Vars{})
	want := strings.ReplaceAll(url.QueryEscape(in), "+", "%20")
	if got != want {
		t.Fatalf("url: got %q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"/u/{{usr}}", 1, 6, `unknown variable "usr"`},
		{"ab\ncd {{user | b64}}", 2, 13, `unknown function "b64"`},
		{"x {{user", 1, 3, "no closing }}"},
		{"{{}}", 1, 1, "empty action"},
		{"{{end}}", 1, 1, "closes no block"},
		{"{{base64}}x", 1, 1, "no {{end}}"},
		{"{{payload}}", 1, 3, "payload takes one number"},
		{"{{payload 0}}", 1, 11, "must be an integer"},
		{"{{rand x}}", 1, 8, "must be an integer"},
		{"{{key zipf:10}}", 1, 7, "want zipf:N:S"},
		{"{{key uniform:0}}", 1, 7, "key count"},
		{"{{key uniform:5 x}}", 1, 17, "key takes one key space"},
		{"{{user 3}}", 1, 8, "takes no argument"},
		{"{{| json}}", 1, 3, "needs a value"},
		{"{{user |}}", 1, 8, "must be followed by a function"},
		{"{{user | json x}}", 1, 15, "takes no argument"},
		{`{{"abc}}`, 1, 1, "no closing }}"},
		{`{{"a\q"}}`, 1, 3, "bad string literal"},
		{"é{{nope}}", 1, 4, `unknown variable "nope"`},
		{"{{base64 | json}}", 1, 3, "needs a value before it"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		var te *Error
		if !errors.As(err, &te) || !errors.Is(err, ErrTemplate) {
			t.Errorf("Parse(%q) = %v, want an *Error", c.src, err)
			continue
		}
		if te.Line != c.line || te.Col != c.col || !strings.Contains(te.Msg, c.msg) {
			t.Errorf("Parse(%q) = %v, want line %d col %d containing %q", c.src, err, c.line, c.col, c.msg)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "/p/{{user}}", `{"k":"{{base64}}u{{user}}-{{key zipf:100:1}}{{end}}","v":"{{payload 10 | json}}"}`,
		"{{rand 10}}{{seq}}{{client}}{{value | url}}", `{{"}}" | base64}}`, "{{json}}{{url}}x{{end}}{{end}}",
		"{{", "}}", "{{end}}", "{{key uniform:3}}", "{{\"\\xff\" | json}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if regexp.MustCompile(`zipf:\d{6}`).MatchString(src) || strings.Contains(src, "payload") && len(src) > 200 {
			t.Skip("large key spaces and payloads are slow, not interesting")
		}
		tm, err := Parse(src)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.Line < 1 || te.Col < 1 {
				t.Fatalf("Parse(%q) error %v has no position", src, err)
			}
			return
		}
		v := Vars{User: 1, Value: []byte("x\"y"), Rand: rand.New(rand.NewSource(1))}
		out := tm.Render([]byte("prefix"), &v)
		if !strings.HasPrefix(string(out), "prefix") {
			t.Fatalf("Render overwrote dst's prefix: %q", out)
		}
		if tm.Literal() && string(out[6:]) != src {
			t.Fatalf("literal template %q rendered %q", src, out[6:])
		}
		if tm.String() != src {
			t.Fatal("String() is not the source")
		}
	})
}

func BenchmarkRender(b *testing.B) {
	tm := MustParse(`{"key":"{{base64}}user-{{user}}-k{{key zipf:10000:1.1}}{{end}}","seq":{{seq}},"data":"{{payload 1000}}"}`)
	v := Vars{User: 3, Rand: rand.New(rand.NewSource(1))}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		v.Next()
		buf = tm.Render(buf[:0], &v)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkRenderJSONEscape(b *testing.B) {
	tm := MustParse(`{"v":"{{value | json}}"}`)
	v := Vars{Value: []byte(strings.Repeat("quote\" and \\ slash\n", 50))}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = tm.Render(buf[:0], &v)
	}
}
