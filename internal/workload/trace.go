package workload

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TraceSpec is a parsed trace string (docs/scenario.md): "zipf:N:s", "paths:FILE",
// "clf:FILE" or "har:FILE" (docs/real-services.md).
type TraceSpec struct {
	Kind string  // zipf | paths | clf | har
	N    int     // zipf: number of pages /p/0 .. /p/N-1
	S    float64 // zipf: exponent, >= 0 (0 is uniform)
	File string  // paths, clf: file name as written
	// MinUsable is the share of a clf log's lines that must parse
	// (0: DefaultTraceMinUsable). It is not part of the string form.
	MinUsable float64
}

// String gives the spec back in the form ParseTraceSpec reads.
func (t TraceSpec) String() string {
	if t.Kind == "zipf" {
		return "zipf:" + strconv.Itoa(t.N) + ":" + strconv.FormatFloat(t.S, 'g', -1, 64)
	}
	return t.Kind + ":" + t.File
}

// maxZipfPages bounds the inverse-CDF table (8 bytes a page).
const maxZipfPages = 10_000_000

// ErrTraceSpec is wrapped by every error of ParseTraceSpec.
var ErrTraceSpec = errors.New("bad trace")

// ParseTraceSpec parses a trace string without opening any file.
func ParseTraceSpec(spec string) (TraceSpec, error) {
	kind, rest, found := strings.Cut(spec, ":")
	if !found {
		return TraceSpec{}, fmt.Errorf("%w %q: want zipf:N:s, paths:FILE or clf:FILE", ErrTraceSpec, spec)
	}
	switch kind {
	case "zipf":
		ns, ss, found := strings.Cut(rest, ":")
		if !found {
			return TraceSpec{}, fmt.Errorf("%w %q: want zipf:N:s, e.g. zipf:18000:1.0", ErrTraceSpec, spec)
		}
		n, err := strconv.Atoi(ns)
		if err != nil || n < 1 || n > maxZipfPages {
			return TraceSpec{}, fmt.Errorf("%w %q: page count %q must be an integer in 1..%d", ErrTraceSpec, spec, ns, maxZipfPages)
		}
		s, err := strconv.ParseFloat(ss, 64)
		if err != nil || s < 0 || s > 100 || math.IsNaN(s) {
			return TraceSpec{}, fmt.Errorf("%w %q: exponent %q must be a number in 0..100", ErrTraceSpec, spec, ss)
		}
		return TraceSpec{Kind: kind, N: n, S: s}, nil
	case "paths", "clf", "har":
		if rest == "" {
			return TraceSpec{}, fmt.Errorf("%w %q: no file name after %q", ErrTraceSpec, spec, kind+":")
		}
		return TraceSpec{Kind: kind, File: rest}, nil
	default:
		return TraceSpec{}, fmt.Errorf("%w %q: unknown kind %q (want zipf, paths, clf or har)", ErrTraceSpec, spec, kind)
	}
}

// A Trace hands out request targets. It is shared, read-only, by every
// client; each client draws from it with its own *rand.Rand through a
// PathSource.
type Trace interface {
	// Source returns the path source of client c of n clients. A source is
	// used by one goroutine only.
	Source(c, n int) PathSource
}

// PathSource yields the next target (a URL path) of one client.
type PathSource interface {
	Next(rng *rand.Rand) string
}

// LoadTrace reads the trace of spec; relative file names are taken from baseDir.
func LoadTrace(spec TraceSpec, baseDir string) (Trace, error) {
	switch spec.Kind {
	case "zipf":
		return newZipfTrace(spec.N, spec.S), nil
	case "paths":
		return loadPaths(resolvePath(baseDir, spec.File))
	case "clf":
		return loadCLFTrace(resolvePath(baseDir, spec.File), spec.MinUsable)
	case "har":
		set, err := LoadHAR(spec.File, baseDir)
		if err != nil {
			return nil, err
		}
		return &requestTrace{set: set}, nil
	}
	return nil, fmt.Errorf("%w: unknown kind %q", ErrTraceSpec, spec.Kind)
}

// CheckTrace opens and reads the trace of spec as LoadTrace does, so that
// a missing or unreadable file is found before a run starts, and returns
// what an access log had skipped. A zipf trace has no file and is not
// built (its table can be large).
func CheckTrace(spec TraceSpec, baseDir string) (CLFSkips, error) {
	if spec.Kind == "zipf" {
		return CLFSkips{}, nil
	}
	t, err := LoadTrace(spec, baseDir)
	if err != nil {
		return CLFSkips{}, err
	}
	return traceSkips(t), nil
}

// loadTrace loads cfg's trace; Validate has parsed its spec.
func loadTrace(cfg Config) (Trace, error) {
	spec, err := ParseTraceSpec(cfg.Trace)
	if err != nil {
		return nil, err
	}
	spec.MinUsable = cfg.TraceMinUsable
	return LoadTrace(spec, cfg.BaseDir)
}

// TraceSkips reports the malformed lines the generator's access log had,
// skipped when it was loaded (zero for other traces), for the run's events.
func (g *Generator) TraceSkips() CLFSkips { return traceSkips(g.trace) }

func traceSkips(t Trace) CLFSkips {
	if c, ok := t.(*clfTrace); ok {
		return c.skips
	}
	return CLFSkips{}
}

func resolvePath(baseDir, name string) string {
	if filepath.IsAbs(name) || baseDir == "" {
		return name
	}
	return filepath.Join(baseDir, name)
}

// zipfTrace requests /p/<i> with probability proportional to 1/(i+1)^s.
type zipfTrace struct {
	z     *Zipf
	names []string // "/p/<i>", built once so that drawing does not allocate
}

func newZipfTrace(n int, s float64) *zipfTrace {
	names := make([]string, n)
	for i := range names {
		names[i] = "/p/" + strconv.Itoa(i)
	}
	return &zipfTrace{z: NewZipf(n, s), names: names}
}

func (t *zipfTrace) Source(int, int) PathSource { return t }
func (t *zipfTrace) Next(rng *rand.Rand) string { return t.names[t.z.Draw(rng)] }

// pathsTrace draws uniformly from a list of paths.
type pathsTrace struct{ paths []string }

func (t *pathsTrace) Source(int, int) PathSource { return t }
func (t *pathsTrace) Next(rng *rand.Rand) string { return t.paths[rng.Intn(len(t.paths))] }

// maxTraceLines bounds paths and clf files read into memory.
const maxTraceLines = 20_000_000

func loadPaths(name string) (*pathsTrace, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("paths trace: %w", err)
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if line > maxTraceLines {
			return nil, fmt.Errorf("%s:%d: more than %d lines", name, line, maxTraceLines)
		}
		p := strings.TrimSpace(sc.Text())
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if err := checkTarget(p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		paths = append(paths, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no paths (one URL path a line, e.g. /index.html)", name)
	}
	return &pathsTrace{paths: paths}, nil
}

// checkTarget accepts what can stand as the target of an HTTP/1.1 request
// line: an absolute path without spaces or control bytes.
func checkTarget(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q does not start with /", p)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("path %q holds a space or control byte at offset %d", p, i)
		}
	}
	return nil
}

// requestTrace stands in the schedule for templated requests and HAR
// replays: the driver chooses what to send (RequestSet), so the path the
// scheduler draws only names arrivals the generator refused.
type requestTrace struct{ set *RequestSet }

func (t *requestTrace) Source(int, int) PathSource { return t }
func (t *requestTrace) Next(*rand.Rand) string     { return "requests" }
