package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
)

// testParams exercises every kind of field the decoder supports.
type testParams struct {
	embeddedParams
	Delay time.Duration `param:"delay"`
	Loss  float64       `param:"loss"`
	Count int           `param:"count"`
	On    bool          `param:"on"`
	Name  string        `param:"name"`
	Level level         `param:"level"`
	skip  int           // unexported: not a parameter
}

type embeddedParams struct {
	Rate int64 `param:"rate"`
}

// level is a TextUnmarshaler: low or high.
type level int

func (l *level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("%q: want low or high", b)
	}
	return nil
}

func newTestParams() *testParams { return &testParams{Delay: time.Second, Loss: 0.1, Count: 1} }

func (p *testParams) Validate() error {
	if p.Count < 1 {
		return fmt.Errorf("count %d: want at least 1", p.Count)
	}
	return nil
}

func TestDecodeParams(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]string
		want testParams
		err  string // "" = no error; else a substring
	}{
		{raw: nil, want: *newTestParams()},
		{raw: map[string]string{"delay": "5ms", "loss": "0.5", "count": "3", "on": "true", "name": "x", "level": "high", "rate": "7"},
			want: testParams{embeddedParams{7}, 5 * time.Millisecond, 0.5, 3, true, "x", 2, 0}},
		{raw: map[string]string{"dealy": "5ms"}, err: `params.dealy: unknown parameter "dealy": it takes count, delay, level, loss, name, on, rate`},
		{raw: map[string]string{"skip": "1"}, err: `params.skip: unknown parameter`},
		{raw: map[string]string{"delay": "soon"}, err: `params.delay: "soon" is not a duration`},
		{raw: map[string]string{"loss": "much"}, err: `params.loss: "much" is not a number`},
		{raw: map[string]string{"count": "1.5"}, err: `params.count: "1.5" is not a whole number`},
		{raw: map[string]string{"on": "perhaps"}, err: `params.on: "perhaps": want true or false`},
		{raw: map[string]string{"level": "mid"}, err: `params.level: "mid": want low or high`},
		{raw: map[string]string{"count": "0"}, err: `params: count 0: want at least 1`},
	} {
		p := newTestParams()
		err := DecodeParams(p, tc.raw)
		if tc.err == "" {
			if err != nil || *p != tc.want {
				t.Errorf("%v: got %+v, %v; want %+v", tc.raw, *p, err, tc.want)
			}
			continue
		}
		var pe *ParamError
		if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &pe) {
			t.Errorf("%v: error %v, want a *ParamError containing %q", tc.raw, err, tc.err)
		}
	}
}

// Every bad key is reported, not only the first, and Validate is not
// called on a half-decoded struct.
func TestDecodeParamsReportsAll(t *testing.T) {
	err := DecodeParams(newTestParams(), map[string]string{"a": "1", "delay": "x", "count": "0"})
	if err == nil {
		t.Fatal("no error")
	}
	got := unjoinErrors(err)
	if len(got) != 2 || !errors.Is(got[0], ErrUnknownParam) || !strings.Contains(got[1].Error(), "params.delay") {
		t.Fatalf("errors %v, want unknown a then bad delay", got)
	}
}

func TestParseParamsWithoutParams(t *testing.T) {
	inj := InjectorFunc(func(context.Context, Target, Occurrence) (Revert, error) { return noRevert, nil })
	if p, err := ParseParams(inj, "app-crash", nil); err != nil || p == nil {
		t.Fatalf("no params: %v %v", p, err)
	}
	_, err := ParseParams(inj, "app-crash", map[string]string{"signal": "KILL"})
	if err == nil || err.Error() != `params.signal: app-crash: unknown parameter "signal": it takes no parameters` {
		t.Fatalf("error %v", err)
	}
}

// WithParams hands the injector the decoded parameters, and refuses an
// occurrence whose parameters were never decoded.
func TestWithParams(t *testing.T) {
	var got *testParams
	inj := WithParams(newTestParams, func(_ context.Context, _ Target, _ Occurrence, p *testParams) (Revert, error) {
		got = p
		return noRevert, nil
	})
	p, err := ParseParams(inj, "slow", map[string]string{"count": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inj.Inject(context.Background(), nil, Occurrence{Type: "slow", Params: p}); err != nil || got == nil || got.Count != 4 {
		t.Fatalf("inject: %v, params %+v", err, got)
	}
	if _, err := inj.Inject(context.Background(), nil, Occurrence{Type: "slow"}); err == nil {
		t.Fatal("undecoded params accepted")
	}
}

// The decoder never panics, and either fails or yields valid params.
func FuzzDecodeParams(f *testing.F) {
	f.Add("delay", "5ms", "count", "3")
	f.Add("level", "high", "on", "1")
	f.Add("loss", "NaN", "rate", "-9223372036854775808")
	f.Add("", "", "skip", "x")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		p := newTestParams()
		if err := DecodeParams(p, map[string]string{k1: v1, k2: v2}); err == nil {
			if err := p.Validate(); err != nil {
				t.Fatalf("decoded params invalid: %v", err)
			}
		}
	})
}

// ValidateFault reports each bad parameter as a FieldError whose path
// leads to the key under params, so the scenario names its line.
func TestValidateFaultParams(t *testing.T) {
	c := scenario.ClusterSpec{System: "static", Nodes: 2}
	f := scenario.Fault{Type: "app-crash", Node: scenario.NodeRef{N: 1}, Params: map[string]string{"signal": "KILL"}}
	err := ValidateFault(3, f, c, 0)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "params.signal" || !errors.Is(err, ErrUnknownParam) {
		t.Fatalf("error %v, want a FieldError on params.signal", err)
	}
	if got := fmt.Sprint(fe.Path()); got != "[faults 3 params signal]" {
		t.Fatalf("path %s", got)
	}
	f.Params = nil
	if err := ValidateFault(3, f, c, 0); err != nil {
		t.Fatal(err)
	}
}

// NewScheduler decodes every occurrence's parameters for its injector
// before anything runs, leaving the caller's slice alone.
func TestNewSchedulerBindsParams(t *testing.T) {
	occ := []Occurrence{{ID: 1, Source: 0, Type: "app-hang", Node: 1, RawParams: map[string]string{}}}
	s, err := NewScheduler(occ, fakeTarget{}, SchedulerConfig{System: "static"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.occ[0].Params.(*NoParams); !ok || occ[0].Params != nil {
		t.Fatalf("scheduler params %T, caller's %T", s.occ[0].Params, occ[0].Params)
	}
	occ[0].RawParams = map[string]string{"how": "long"}
	_, err = NewScheduler(occ, fakeTarget{}, SchedulerConfig{System: "static"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Index != 0 || !errors.Is(err, ErrUnknownParam) {
		t.Fatalf("error %v, want the unknown parameter of scenario fault 0", err)
	}
}

type fakeTarget struct{}

func (fakeTarget) Size() int { return 2 }

// The whole path: a scenario fault's params: map is carried by Expand,
// decoded by NewScheduler for the injector registered for the system, and
// the injector receives it typed when the Scheduler injects.
func TestParamsReachInjectorTyped(t *testing.T) {
	const system = "params-test-system" // a system no other test uses
	var got []*testParams
	Register("delay", WithParams(newTestParams, func(_ context.Context, _ Target, _ Occurrence, p *testParams) (Revert, error) {
		got = append(got, p)
		return noRevert, nil
	}), Support{Systems: []string{system}})
	faults := []scenario.Fault{{Type: "delay", Node: scenario.NodeRef{N: 1}, At: scenario.D(time.Second), Duration: scenario.D(time.Second),
		Params: map[string]string{"delay": "250ms", "level": "low"}}}
	occ, err := Expand(faults, Plan{RunLength: 10 * time.Second, Nodes: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if occ[0].RawParams["delay"] != "250ms" || occ[0].Params != nil {
		t.Fatalf("expanded %+v: want the raw params, not yet decoded", occ[0])
	}
	s, err := NewScheduler(occ, fakeTarget{}, SchedulerConfig{System: system})
	if err != nil {
		t.Fatal(err)
	}
	s.Step(context.Background(), time.Second)
	if len(got) != 1 || got[0].Delay != 250*time.Millisecond || got[0].Level != 1 || got[0].Count != 1 {
		t.Fatalf("injector got %+v, want delay 250ms, level low, default count 1", got)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}
