package workload

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CLFEntry is one line of a Common or Combined Log Format access log:
//
//	host ident authuser [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326 ["referer" "user-agent"]
//
// A request field that is not "METHOD TARGET [PROTO]" (servers log "-" and
// raw junk for malformed requests) leaves Method and Target empty; that is
// not an error, because such lines are part of real logs.
type CLFEntry struct {
	Host      string
	Ident     string
	User      string
	Time      time.Time
	Request   string // the request line as logged, unescaped
	Method    string
	Target    string
	Proto     string
	Status    int
	Bytes     int64 // 0 when logged as "-"
	Referer   string
	UserAgent string
}

// ErrCLF is wrapped by every error of ParseCLFLine and ParseCLF.
var ErrCLF = errors.New("not Common Log Format")

const clfTimeLayout = "02/Jan/2006:15:04:05 -0700"

// ParseCLFLine parses one log line. Fields after the user agent are ignored.
func ParseCLFLine(line string) (CLFEntry, error) {
	var e CLFEntry
	rest := strings.TrimRight(line, "\r\n")
	var err error
	field := func(name string) string {
		if err != nil {
			return ""
		}
		var f string
		f, rest, _ = strings.Cut(rest, " ")
		if f == "" {
			err = fmt.Errorf("%w: missing %s", ErrCLF, name)
		}
		return f
	}
	e.Host = field("host")
	e.Ident = field("ident")
	e.User = field("authuser")
	if err != nil {
		return CLFEntry{}, err
	}
	if !strings.HasPrefix(rest, "[") {
		return CLFEntry{}, fmt.Errorf("%w: want [date] after the user, found %q", ErrCLF, clip(rest))
	}
	date, after, found := strings.Cut(rest[1:], "]")
	if !found {
		return CLFEntry{}, fmt.Errorf("%w: date has no closing ]", ErrCLF)
	}
	if e.Time, err = time.Parse(clfTimeLayout, date); err != nil {
		return CLFEntry{}, fmt.Errorf("%w: date %q: want like 10/Oct/2000:13:55:36 -0700", ErrCLF, clip(date))
	}
	rest = strings.TrimPrefix(after, " ")
	if e.Request, rest, err = quoted(rest, "request"); err != nil {
		return CLFEntry{}, err
	}
	rest = strings.TrimPrefix(rest, " ")
	status := field("status")
	bytes := field("bytes")
	if err != nil {
		return CLFEntry{}, err
	}
	if e.Status, err = strconv.Atoi(status); err != nil || e.Status < 0 || e.Status > 999 {
		return CLFEntry{}, fmt.Errorf("%w: status %q is not a number in 0..999", ErrCLF, clip(status))
	}
	if bytes != "-" {
		if e.Bytes, err = strconv.ParseInt(bytes, 10, 64); err != nil || e.Bytes < 0 {
			return CLFEntry{}, fmt.Errorf("%w: bytes %q is neither - nor a count", ErrCLF, clip(bytes))
		}
	}
	if rest = strings.TrimLeft(rest, " "); rest != "" { // Combined: "referer" "user-agent"
		if e.Referer, rest, err = quoted(rest, "referer"); err != nil {
			return CLFEntry{}, err
		}
		if rest = strings.TrimLeft(rest, " "); rest != "" {
			if e.UserAgent, _, err = quoted(rest, "user agent"); err != nil {
				return CLFEntry{}, err
			}
		}
	}
	e.Method, e.Target, e.Proto = splitRequest(e.Request)
	return e, nil
}

// quoted reads a "..." field with backslash escapes, as Apache and nginx write it.
func quoted(s, name string) (value, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", fmt.Errorf("%w: %s must be in double quotes, found %q", ErrCLF, name, clip(s))
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: %s has no closing quote", ErrCLF, name)
}

func splitRequest(r string) (method, target, proto string) {
	f := strings.Fields(r)
	switch {
	case len(f) == 2:
		return f[0], f[1], ""
	case len(f) == 3 && strings.HasPrefix(f[2], "HTTP/"):
		return f[0], f[1], f[2]
	}
	return "", "", ""
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// ParseCLF reads a whole log; name is used in errors as name:line. Blank
// lines are skipped; any other line that does not parse is an error.
func ParseCLF(r io.Reader, name string) ([]CLFEntry, error) {
	var out []CLFEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if line > maxTraceLines {
			return nil, fmt.Errorf("%s:%d: more than %d lines", name, line, maxTraceLines)
		}
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		e, err := ParseCLFLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return out, nil
}

// CLFSkips is what ReadCLF left out of a log: lines that are not Common
// Log Format. Real logs hold a few (a truncated last line, a line another
// program wrote into the file), so they are counted, not fatal.
type CLFSkips struct {
	Lines     int    // non-blank lines read
	Malformed int    // of them, lines that did not parse and were skipped
	First     []int  // line numbers of the first malformed lines (at most maxSkipLines)
	Reason    string // why the first malformed line did not parse
}

// maxSkipLines bounds the line numbers CLFSkips keeps.
const maxSkipLines = 10

// Usable is the share of non-blank lines that parsed (1 for an empty log).
func (s CLFSkips) Usable() float64 {
	if s.Lines == 0 {
		return 1
	}
	return float64(s.Lines-s.Malformed) / float64(s.Lines)
}

// String says what was skipped, e.g. "2 of 51 lines malformed and skipped
// (lines 7, 30; line 7: ...)"; it is empty when nothing was.
func (s CLFSkips) String() string {
	if s.Malformed == 0 {
		return ""
	}
	nums := make([]string, len(s.First))
	for i, n := range s.First {
		nums[i] = strconv.Itoa(n)
	}
	more := ""
	if s.Malformed > len(s.First) {
		more = ", ..."
	}
	return fmt.Sprintf("%d of %d lines malformed and skipped (line %s%s; line %d: %s)",
		s.Malformed, s.Lines, strings.Join(nums, ", "), more, s.First[0], s.Reason)
}

// ReadCLF reads a whole log like ParseCLF, but skips and counts the lines
// that do not parse instead of stopping at the first. Its error is only
// for what stops reading: an unreadable file, an over-long line, more than
// maxTraceLines lines.
func ReadCLF(r io.Reader, name string) ([]CLFEntry, CLFSkips, error) {
	var out []CLFEntry
	var skips CLFSkips
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if line > maxTraceLines {
			return nil, skips, fmt.Errorf("%s:%d: more than %d lines", name, line, maxTraceLines)
		}
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		skips.Lines++
		e, err := ParseCLFLine(text)
		if err != nil {
			if skips.Malformed == 0 {
				skips.Reason = strings.TrimPrefix(err.Error(), ErrCLF.Error()+": ")
			}
			skips.Malformed++
			if len(skips.First) < maxSkipLines {
				skips.First = append(skips.First, line)
			}
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, skips, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return out, skips, nil
}

// replayTarget turns a logged GET into a path we can send, or reports false.
// Absolute-form targets ("http://host/p", logged by proxies) keep their path.
func replayTarget(e CLFEntry) (string, bool) {
	if e.Method != "GET" {
		return "", false
	}
	t := e.Target
	if i := strings.Index(t, "://"); i > 0 && !strings.HasPrefix(t, "/") {
		j := strings.IndexByte(t[i+3:], '/')
		if j < 0 {
			t = "/"
		} else {
			t = t[i+3+j:]
		}
	}
	return t, checkTarget(t) == nil
}

// clfTrace replays the GETs of an access log in order. Client c of n takes
// lines c, c+n, c+2n, ... so that clients together replay the log once per
// cycle. offsets hold each line's time since the first line; lines logged
// in the same second are spread evenly across it, since the log's clock
// only has whole seconds.
type clfTrace struct {
	paths   []string
	offsets []time.Duration
	skips   CLFSkips // malformed lines left out
}

// DefaultTraceMinUsable is the share of an access log's non-blank lines
// that must parse for it to be replayed (scenario key
// workload.trace_min_usable).
const DefaultTraceMinUsable = 0.9

// ErrTraceUnusable is wrapped by loadCLFTrace's error for a log with too
// few lines that parse.
var ErrTraceUnusable = errors.New("too few usable lines")

// loadCLFTrace reads the log at name, skipping malformed lines; it fails
// when fewer than minUsable (0: DefaultTraceMinUsable) of its lines parse.
func loadCLFTrace(name string, minUsable float64) (*clfTrace, error) {
	if minUsable <= 0 {
		minUsable = DefaultTraceMinUsable
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("clf trace: %w", err)
	}
	defer f.Close()
	entries, skips, err := ReadCLF(f, name)
	if err != nil {
		return nil, err
	}
	if skips.Usable() < minUsable {
		return nil, fmt.Errorf("%s: %w: %s, %.1f%% usable, below trace_min_usable %g (is it a Common Log Format access log?)",
			name, ErrTraceUnusable, skips, 100*skips.Usable(), minUsable)
	}
	t, err := newCLFTrace(entries, name)
	if err != nil {
		return nil, err
	}
	t.skips = skips
	return t, nil
}

func newCLFTrace(entries []CLFEntry, name string) (*clfTrace, error) {
	type item struct {
		path string
		at   time.Time
	}
	var items []item
	for _, e := range entries {
		if p, ok := replayTarget(e); ok {
			items = append(items, item{p, e.Time})
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no GET requests to replay among %d lines", name, len(entries))
	}
	// Logs are written at completion, so lines can be slightly out of order.
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	t := &clfTrace{paths: make([]string, len(items)), offsets: make([]time.Duration, len(items))}
	first := items[0].at
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].at.Equal(items[i].at) {
			j++
		}
		for k := i; k < j; k++ {
			t.paths[k] = items[k].path
			t.offsets[k] = items[k].at.Sub(first) + time.Duration(k-i)*time.Second/time.Duration(j-i)
		}
		i = j
	}
	return t, nil
}

func (t *clfTrace) Source(c, n int) PathSource {
	return &clfSource{t: t, next: c % len(t.paths), step: n}
}

type clfSource struct {
	t          *clfTrace
	next, step int
}

func (s *clfSource) Next(*rand.Rand) string {
	p := s.t.paths[s.next]
	s.next = (s.next + s.step) % len(s.t.paths)
	return p
}
