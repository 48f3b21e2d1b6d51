package kvcheck

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func put(t float64, key uint32, v uint64, acked bool) Op {
	r := Acked
	if !acked {
		r = Unacked
	}
	return Op{StartS: t, EndS: t + 0.01, Key: key, Kind: Put, Version: v, Result: r}
}

func get(t float64, key uint32, v uint64) Op {
	r := Found
	if v == 0 {
		r = Missing
	}
	return Op{StartS: t, EndS: t + 0.01, Key: key, Kind: Get, Version: v, Result: r}
}

func garbage(t float64, key uint32) Op {
	return Op{StartS: t, EndS: t + 0.01, Key: key, Kind: Get, Result: Garbage}
}

func TestCheckerHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []Op
		want Counts
	}{
		{"none", nil, Counts{}},
		{"read your writes", []Op{put(0, 1, 1, true), get(1, 1, 1), put(2, 1, 2, true), get(3, 1, 2)},
			Counts{Reads: 2, OK: 2, WritesAcked: 2}},
		{"missing before any write is ok", []Op{get(0, 1, 0), put(1, 1, 1, true), get(2, 1, 1)},
			Counts{Reads: 2, OK: 2, WritesAcked: 1}},
		{"missing after an acked write is stale, then seen", []Op{put(0, 1, 1, true), get(1, 1, 0), get(2, 1, 1)},
			Counts{Reads: 2, OK: 1, Stale: 1, WritesAcked: 1}},
		{"older version, then the newer one", []Op{put(0, 1, 1, true), put(1, 1, 2, true), get(2, 1, 1), get(3, 1, 2)},
			Counts{Reads: 2, OK: 1, Stale: 1, WritesAcked: 2}},
		{"monotonic reads: back behind a seen version", []Op{put(0, 1, 1, false), get(1, 1, 1), get(2, 1, 0), get(3, 1, 1)},
			Counts{Reads: 3, OK: 2, Stale: 1, WritesUnacked: 1}},
		{"unacked write may be read or not", []Op{put(0, 1, 1, true), put(1, 1, 2, false), get(2, 1, 1), get(3, 1, 2), put(4, 1, 3, false), get(5, 1, 2)},
			Counts{Reads: 3, OK: 3, WritesAcked: 1, WritesUnacked: 2}},
		{"lost: never seen again by later reads", []Op{put(0, 1, 1, true), put(1, 1, 2, true), get(2, 1, 1), get(3, 1, 1), get(4, 1, 1)},
			Counts{Reads: 3, Stale: 1, Lost: 2, WritesAcked: 2}},
		{"stale at the end with no later read stays stale", []Op{put(0, 1, 1, true), get(1, 1, 0)},
			Counts{Reads: 1, Stale: 1, WritesAcked: 1}},
		{"later acked write seen resolves stale", []Op{put(0, 1, 1, true), get(1, 1, 0), put(2, 1, 2, true), get(3, 1, 2)},
			Counts{Reads: 2, OK: 1, Stale: 1, WritesAcked: 2}},
		{"partly resolved: saw v1 but not v2", []Op{put(0, 1, 1, true), get(1, 1, 0), put(2, 1, 2, true), get(3, 1, 1), get(4, 1, 1)},
			// get@1 required 1: resolved stale by get@3 (v1). get@3, get@4 required 2: never seen, missed later: get@3 lost; get@4 last, no later read: stale.
			Counts{Reads: 3, Stale: 2, Lost: 1, WritesAcked: 2}},
		{"phantom: a version never written", []Op{put(0, 1, 1, true), get(1, 1, 7)},
			Counts{Reads: 1, Phantom: 1, WritesAcked: 1}},
		{"phantom: garbage value", []Op{put(0, 1, 1, true), garbage(1, 1), get(2, 1, 1)},
			Counts{Reads: 2, OK: 1, Phantom: 1, WritesAcked: 1}},
		{"phantom: a value before any write", []Op{get(0, 2, 1)},
			Counts{Reads: 1, Phantom: 1}},
		{"keys are independent", []Op{put(0, 1, 1, true), get(1, 2, 0), get(2, 1, 1)},
			Counts{Reads: 2, OK: 2, WritesAcked: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{WindowS: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range tc.ops {
				if err := c.Add(op); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Close().Total; got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCheckerUsersAreIndependent(t *testing.T) {
	c, _ := New(Config{WindowS: 1})
	a := put(0, 1, 1, true)
	b := get(1, 1, 0)
	b.User = 1 // another user's key 1: never written by that user
	for _, op := range []Op{a, b} {
		if err := c.Add(op); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Close().Total; got.OK != 1 || got.Anomalies() != 0 {
		t.Errorf("got %+v, want one ok read", got)
	}
}

func TestCheckerWindowsAndSpans(t *testing.T) {
	c, _ := New(Config{WindowS: 5, Spans: []Span{{10, 20}, {0, 100}}})
	ops := []Op{put(0, 1, 1, true), get(1, 1, 1), put(11, 1, 2, true), get(12, 1, 1), get(13, 1, 1), get(21, 1, 9)}
	for _, op := range ops {
		if err := c.Add(op); err != nil {
			t.Fatal(err)
		}
	}
	r := c.Close()
	if len(r.Windows) != 5 {
		t.Fatalf("%d windows, want 5", len(r.Windows))
	}
	if w := r.Windows[0]; w.OK != 1 || w.Reads != 1 {
		t.Errorf("window 0: %+v, want one ok read", w)
	}
	// get@12 was missed later by get@13: lost; get@13 had no later read of its key that was not phantom... the phantom read does not resolve it: stale.
	if w := r.Windows[2]; w.Lost != 1 || w.Stale != 1 {
		t.Errorf("window 2: %+v, want 1 lost and 1 stale", w)
	}
	if w := r.Windows[4]; w.Phantom != 1 {
		t.Errorf("window 4: %+v, want 1 phantom", w)
	}
	if s := r.Spans[0]; s.Lost != 1 || s.Stale != 1 || s.Reads != 2 {
		t.Errorf("span [10,20): %+v", s)
	}
	if s := r.Spans[1]; s != r.Total {
		t.Errorf("span [0,100): %+v, want the total %+v", s, r.Total)
	}
}

func TestCheckerPendingIsBounded(t *testing.T) {
	c, _ := New(Config{WindowS: 1})
	if err := c.Add(put(0, 1, 1, true)); err != nil {
		t.Fatal(err)
	}
	n := MaxPending * 3
	for i := range n {
		if err := c.Add(get(float64(i), 1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if p := len(c.keys[keyID{0, 0, 1}].pending); p > MaxPending {
		t.Fatalf("%d reads pending, bound %d", p, MaxPending)
	}
	got := c.Close().Total
	if got.Lost != int64(n-1) || got.Stale != 1 {
		t.Errorf("got %+v, want %d lost and the last one stale", got, n-1)
	}
}

func TestCheckerRejects(t *testing.T) {
	c, _ := New(Config{WindowS: 1})
	if err := c.Add(put(0, 1, 2, true)); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(put(1, 1, 2, true)); !errors.Is(err, ErrOp) || !strings.Contains(err.Error(), "versions only grow") {
		t.Errorf("reused version: %v", err)
	}
	if err := c.Add(get(1e12, 1, 2)); !errors.Is(err, ErrOp) {
		t.Errorf("far start: %v", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("window 0 accepted")
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	ops := []Op{put(0.5, 3, 1, true), get(1.25, 3, 1), put(2, 3, 2, false), get(3, 3, 0), garbage(4, 3)}
	ops[1].Client, ops[1].User = 7, 9
	var buf bytes.Buffer
	w := NewWriter(&buf, time.Time{})
	for _, op := range ops {
		w.Record(op)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	var got []Op
	if err := ReadHistory(&buf, "h.csv", func(op Op) error { got = append(got, op); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ops) {
		t.Fatalf("read %d ops, wrote %d", len(got), len(ops))
	}
	for i := range ops {
		if got[i] != ops[i] {
			t.Errorf("op %d: read %+v, wrote %+v", i, got[i], ops[i])
		}
	}
}

func TestHistoryErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "h.csv: empty"},
		{"a,b\n", "h.csv:1: header"},
		{HistoryHeader + "\n0,1,0,0,0,put,1,acked\n0,1,0,0,0,del,1,acked\n", `h.csv:3: op "del"`},
		{HistoryHeader + "\n0,1,0,0,0,put,1,found\n", "h.csv:2: put result"},
		{HistoryHeader + "\n0,1,0,0,0,get,3,missing\n", "h.csv:2: get missing with version 3"},
		{HistoryHeader + "\n2,1,0,0,0,get,0,missing\n", "h.csv:2: t_end_s"},
		{HistoryHeader + "\n0,1,0,0,0,get\n", "h.csv:2: 6 fields"},
		{HistoryHeader + "\n-1,1,0,0,0,get,0,missing\n", "h.csv:2: t_start_s"},
		{HistoryHeader + "\n" + strings.Repeat("9", 300) + "\n", "h.csv:2:"},
	} {
		err := ReadHistory(strings.NewReader(tc.in), "h.csv", func(Op) error { return nil })
		if !errors.Is(err, ErrHistory) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrHistory naming %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"0.000000,0.010000,0,0,1,put,1,acked", "1.5,2,3,4,5,get,0,missing", "1,2,3,4,5,get,7,garbage",
		"1,2,3,4,5,get,7,found", ",,,,,,,", "1e308,inf,0,0,0,put,0,unacked", "0,0,4294967296,0,0,get,0,missing"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		op, err := ParseLine(s)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to a line that parses to the same op.
		line := AppendLine(nil, op)
		again, err := ParseLine(string(line[:len(line)-1]))
		if err != nil {
			t.Fatalf("%q parsed, its encoding %q does not: %v", s, line, err)
		}
		if again.Kind != op.Kind || again.Result != op.Result || again.Version != op.Version || again.Key != op.Key ||
			again.Client != op.Client || again.User != op.User {
			t.Fatalf("%q: %+v re-read as %+v", s, op, again)
		}
		c, _ := New(Config{WindowS: 1})
		_ = c.Add(op)
		c.Close()
	})
}
