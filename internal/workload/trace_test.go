package workload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseCLFLine(t *testing.T) {
	cases := []struct {
		line string
		want CLFEntry
	}{
		{`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
			CLFEntry{Host: "127.0.0.1", Ident: "-", User: "frank", Request: "GET /apache_pb.gif HTTP/1.0",
				Method: "GET", Target: "/apache_pb.gif", Proto: "HTTP/1.0", Status: 200, Bytes: 2326}},
		{`10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a?b=c HTTP/1.1" 304 - "http://x/" "Mozilla/5.0 (X11; \"q\")"`,
			CLFEntry{Host: "10.0.0.1", Ident: "-", User: "-", Request: "GET /a?b=c HTTP/1.1",
				Method: "GET", Target: "/a?b=c", Proto: "HTTP/1.1", Status: 304, Referer: "http://x/", UserAgent: `Mozilla/5.0 (X11; "q")`}},
		{`h - - [10/Oct/2000:13:55:36 +0000] "-" 408 0`, // a request the server never got
			CLFEntry{Host: "h", Ident: "-", User: "-", Request: "-", Status: 408}},
		{`h - - [10/Oct/2000:13:55:36 +0000] "\x16\x03\x01" 400 157`, // TLS sent to a plain port
			CLFEntry{Host: "h", Ident: "-", User: "-", Request: "x16x03x01", Status: 400, Bytes: 157}},
		{`h - - [10/Oct/2000:13:55:36 +0000] "GET /old" 200 5`, // HTTP/0.9
			CLFEntry{Host: "h", Ident: "-", User: "-", Request: "GET /old", Method: "GET", Target: "/old", Status: 200, Bytes: 5}},
	}
	for _, tc := range cases {
		got, err := ParseCLFLine(tc.line)
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		got.Time = time.Time{}
		if got != tc.want {
			t.Errorf("%s\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
}

func TestParseCLFLineErrors(t *testing.T) {
	cases := map[string]string{
		`127.0.0.1 -`:   "missing authuser",
		`127.0.0.1 - -`: "want [date]",
		`127.0.0.1 - - 10/Oct/2000:13:55:36 -0700 "GET / HTTP/1.0" 200 1`:       "want [date]",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700 "GET / HTTP/1.0" 200 1`:      "no closing ]",
		`127.0.0.1 - - [2000-10-10T13:55:36Z] "GET / HTTP/1.0" 200 1`:           "date",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] GET / HTTP/1.0 200 1`:       "request must be in double quotes",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0 200 1`:      "request has no closing quote",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" OK 1`:      "status",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200`:       "missing bytes",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 x`:     "bytes",
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 ref`: "referer must be in double quotes",
	}
	for line, want := range cases {
		_, err := ParseCLFLine(line)
		if !errors.Is(err, ErrCLF) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", line, err, want)
		}
	}
}

func TestParseCLFNamesFileAndLine(t *testing.T) {
	log := "h - - [10/Oct/2000:13:55:36 +0000] \"GET / HTTP/1.0\" 200 1\n\nh - - [bad] \"GET / HTTP/1.0\" 200 1\n"
	_, err := ParseCLF(strings.NewReader(log), "access.log")
	if err == nil || !strings.HasPrefix(err.Error(), "access.log:3: ") {
		t.Errorf("error %v, want it to start with access.log:3:", err)
	}
}

func FuzzParseCLF(f *testing.F) {
	f.Add(`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`)
	f.Add(`h - - [10/Oct/2000:13:55:36 +0000] "GET /a HTTP/1.1" 304 - "r" "u \"x\""`)
	f.Add(`h - - [10/Oct/2000:13:55:36 +0000] "-" 400 0`)
	f.Add(`h - - [10/Oct/2000:13:55:36 +0000] "GET http://h HTTP/1.1" 200 0`)
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseCLFLine(line)
		if err != nil {
			if !errors.Is(err, ErrCLF) {
				t.Fatalf("error %v does not wrap ErrCLF", err)
			}
			return
		}
		if e.Status < 0 || e.Status > 999 || e.Bytes < 0 {
			t.Fatalf("impossible status %d or bytes %d", e.Status, e.Bytes)
		}
		// Whatever a log line says, a replayed target is safe to put in a request line.
		if p, ok := replayTarget(e); ok {
			if err := checkTarget(p); err != nil {
				t.Fatalf("replay target %q: %v", p, err)
			}
		}
		if _, err := ParseCLF(strings.NewReader(line+"\n"+line), "fuzz.log"); err != nil && !strings.Contains(line, "\n") {
			t.Fatalf("a line that parses alone fails in a file: %v", err)
		}
		if entries, skips, err := ReadCLF(strings.NewReader(line+"\n"+line), "fuzz.log"); err == nil && len(entries)+skips.Malformed != skips.Lines {
			t.Fatalf("%d entries + %d skipped != %d lines", len(entries), skips.Malformed, skips.Lines)
		}
	})
}

func TestParseTraceSpec(t *testing.T) {
	good := map[string]TraceSpec{
		"zipf:18000:1.0":   {Kind: "zipf", N: 18000, S: 1},
		"zipf:1:0":         {Kind: "zipf", N: 1, S: 0},
		"paths:urls.txt":   {Kind: "paths", File: "urls.txt"},
		"clf:/var/log/a:b": {Kind: "clf", File: "/var/log/a:b"},
	}
	for in, want := range good {
		got, err := ParseTraceSpec(in)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "zipf", "zipf:10", "zipf:0:1", "zipf:-5:1", "zipf:10:-1", "zipf:10:NaN", "zipf:x:1", "paths:", "clf:", "pareto:1:2", "/p/1"} {
		if _, err := ParseTraceSpec(in); !errors.Is(err, ErrTraceSpec) {
			t.Errorf("%q: error %v, want ErrTraceSpec", in, err)
		}
	}
}

func FuzzParseTraceSpec(f *testing.F) {
	for _, s := range []string{"zipf:18000:1.0", "zipf:5:0.5", "paths:a.txt", "clf:x.log", "zipf:1e3:1", "zipf:10:+Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		spec, err := ParseTraceSpec(in)
		if err != nil {
			return
		}
		again, err := ParseTraceSpec(spec.String())
		if err != nil || again != spec {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v: does not round-trip", in, spec, spec.String(), again, err)
		}
		if spec.Kind == "zipf" && (spec.N < 1 || spec.N > maxZipfPages || !(spec.S >= 0 && spec.S <= 100)) {
			t.Fatalf("accepted out-of-range %+v", spec)
		}
	})
}

func TestPathsTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	tr, err := LoadTrace(TraceSpec{Kind: "paths", File: write("ok.txt", "# pages\n/a\n\n  /b?x=1  \n")}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.(*pathsTrace).paths; len(got) != 2 || got[0] != "/a" || got[1] != "/b?x=1" {
		t.Errorf("paths %q", got)
	}
	_, err = LoadTrace(TraceSpec{Kind: "paths", File: write("bad.txt", "/a\nb c\n")}, dir)
	if err == nil || !strings.Contains(err.Error(), "bad.txt:2: ") {
		t.Errorf("error %v, want bad.txt:2", err)
	}
	_, err = LoadTrace(TraceSpec{Kind: "paths", File: write("empty.txt", "# nothing\n")}, dir)
	if err == nil || !strings.Contains(err.Error(), "no paths") {
		t.Errorf("error %v, want no paths", err)
	}
	_, err = LoadTrace(TraceSpec{Kind: "clf", File: write("posts.log", `h - - [10/Oct/2000:13:55:36 +0000] "POST / HTTP/1.0" 200 1`)}, dir)
	if err == nil || !strings.Contains(err.Error(), "no GET requests") {
		t.Errorf("error %v, want no GET requests", err)
	}
}

// clfLog is n good GET lines, one a second, with odd lines put in at the
// given 1-based line numbers.
func clfLog(n int, odd map[int]string) string {
	var b strings.Builder
	good := 0
	for line := 1; good < n || odd[line] != ""; line++ {
		if s, ok := odd[line]; ok {
			b.WriteString(s + "\n")
			continue
		}
		b.WriteString("10.0.0.1 - - [10/Oct/2000:13:55:" + twoDigits(good%60) + " +0000] \"GET /p/" + twoDigits(good) + " HTTP/1.0\" 200 10\n")
		good++
	}
	return b.String()
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10%10), byte('0' + n%10)}) }

func TestCLFOneOddLineIsSkippedNotFatal(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "access.log")
	log := clfLog(50, map[int]string{17: "this line was written by logrotate"})
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	skips, err := CheckTrace(TraceSpec{Kind: "clf", File: "access.log"}, dir)
	if err != nil {
		t.Fatalf("one odd line among 50 good ones: %v", err)
	}
	if skips.Lines != 51 || skips.Malformed != 1 || len(skips.First) != 1 || skips.First[0] != 17 {
		t.Errorf("skips %+v, want line 17 of 51 skipped", skips)
	}
	if s := skips.String(); !strings.Contains(s, "1 of 51 lines") || !strings.Contains(s, "line 17") {
		t.Errorf("report %q names neither the count nor the line", s)
	}
	tr, err := LoadTrace(TraceSpec{Kind: "clf", File: name}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tr.(*clfTrace).paths); got != 50 {
		t.Errorf("%d paths replayed, want the 50 good lines", got)
	}
}

func TestCLFTooFewUsableLines(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.log")
	if err := os.WriteFile(garbage, []byte("not\na\nlog\nfile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := CheckTrace(TraceSpec{Kind: "clf", File: garbage}, "")
	if !errors.Is(err, ErrTraceUnusable) || !strings.Contains(err.Error(), "4 of 4 lines") {
		t.Errorf("garbage log: error %v, want ErrTraceUnusable counting 4 of 4 lines", err)
	}
	// 5 odd lines among 45 good: 90% usable passes the default, not 0.95.
	odd := map[int]string{}
	for _, l := range []int{2, 4, 6, 8, 10} {
		odd[l] = "junk"
	}
	mixed := filepath.Join(dir, "mixed.log")
	if err := os.WriteFile(mixed, []byte(clfLog(45, odd)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckTrace(TraceSpec{Kind: "clf", File: mixed}, ""); err != nil {
		t.Errorf("90%% usable with the default threshold 0.9: %v", err)
	}
	if _, err := CheckTrace(TraceSpec{Kind: "clf", File: mixed, MinUsable: 0.95}, ""); !errors.Is(err, ErrTraceUnusable) {
		t.Errorf("90%% usable with threshold 0.95: error %v, want ErrTraceUnusable", err)
	}
}

func TestCheckTraceMissingFile(t *testing.T) {
	for _, kind := range []string{"paths", "clf"} {
		_, err := CheckTrace(TraceSpec{Kind: kind, File: "nope.txt"}, t.TempDir())
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: error %v, want one wrapping os.ErrNotExist", kind, err)
		}
	}
	if _, err := CheckTrace(TraceSpec{Kind: "zipf", N: 10, S: 1}, ""); err != nil {
		t.Errorf("zipf: %v", err)
	}
}
