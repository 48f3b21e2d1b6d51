package stub

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

var t0 = time.Unix(1_700_000_000, 0)

func newCore(t *testing.T, bricks int, mod func(*Config)) *Core {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Seed = 1
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := NewCore(cfg)
	for id := 1; id <= bricks; id++ {
		c.Beacon(t0, uint16(id), 1)
	}
	return c
}

func decode(t *testing.T, frame []byte) wire.Msg {
	t.Helper()
	m, err := wire.Decode(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ack(id uint64, st wire.Status) *wire.Msg {
	return &wire.Msg{Type: wire.TWriteAck, ID: id, Status: st}
}

func reply(id uint64, st wire.Status, v []byte) *wire.Msg {
	return &wire.Msg{Type: wire.TReadReply, ID: id, Status: st, Value: v}
}

func mustWrite(t *testing.T, c *Core, value []byte) (uint64, []Send) {
	t.Helper()
	id, out, err := c.Write(t0, wire.Key{1}, value, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return id, out
}

func TestWriteReturnsAfterQuota(t *testing.T) {
	c := newCore(t, 4, nil)
	id, out := mustWrite(t, c, []byte("v"))
	if len(out) != 3 {
		t.Fatalf("sent to %d bricks, want W=3", len(out))
	}
	m := decode(t, out[0].Frame)
	if m.Type != wire.TWrite || m.ID != id || m.Budget != 60000 || m.Checksum != wire.Checksum([]byte("v")) {
		t.Fatalf("frame %+v", m)
	}
	if r := c.Receive(t0, out[0].Brick, ack(id, wire.OK)); len(r) != 0 {
		t.Fatalf("returned after 1 ack: %+v", r)
	}
	r := c.Receive(t0, out[1].Brick, ack(id, wire.OK))
	if len(r) != 1 || r[0].Err != nil {
		t.Fatalf("after 2 acks: %+v", r)
	}
	if want := []uint16{out[0].Brick, out[1].Brick}; !slices.Equal(r[0].Cookie.Bricks, want) {
		t.Fatalf("cookie bricks %v, want %v", r[0].Cookie.Bricks, want)
	}
	// The third brick's late ack is absorbed; the op is then gone.
	if r := c.Receive(t0, out[2].Brick, ack(id, wire.OK)); len(r) != 0 || c.Pending() != 0 {
		t.Fatalf("late ack: %+v, pending %d", r, c.Pending())
	}
}

func TestWriteRejectsAtOnce(t *testing.T) {
	c := newCore(t, 1, nil)
	if _, _, err := c.Write(t0, wire.Key{}, nil, t0.Add(time.Minute)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("1 live brick, WQ=2: %v", err)
	}
	c = newCore(t, 3, func(c *Config) { c.InitialWindow = 1; c.MaxWindow = 1 })
	mustWrite(t, c, nil) // fills every window of size 1
	if _, out, err := c.Write(t0, wire.Key{}, nil, t0.Add(time.Minute)); !errors.Is(err, ErrOverloaded) || out != nil {
		t.Fatalf("windows full: err %v, sent %d", err, len(out))
	}
	c = newCore(t, 3, func(c *Config) { c.AIMD = false; c.InitialWindow = 1; c.MaxWindow = 1 })
	mustWrite(t, c, nil)
	if _, _, err := c.Write(t0, wire.Key{}, nil, t0.Add(time.Minute)); err != nil {
		t.Fatalf("AIMD off must not reject: %v", err)
	}
	if _, _, err := c.Write(t0, wire.Key{}, make([]byte, c.cfg.MaxValue+1), t0.Add(time.Minute)); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("oversized value: %v", err)
	}
}

func TestTimeoutHalvesWindowAndAcksGrowIt(t *testing.T) {
	c := newCore(t, 3, nil)
	id, out := mustWrite(t, c, nil)
	c.Receive(t0, out[0].Brick, ack(id, wire.OK))
	w0, _ := c.Window(out[0].Brick)
	if w0 != 33 {
		t.Fatalf("window after ack in slow start %v, want 33", w0)
	}
	if r := c.Tick(t0.Add(59 * time.Millisecond)); len(r) != 0 {
		t.Fatalf("timed out early: %+v", r)
	}
	r := c.Tick(t0.Add(60 * time.Millisecond))
	if len(r) != 1 || !errors.Is(r[0].Err, ErrTimeout) {
		t.Fatalf("tick at deadline: %+v", r)
	}
	for _, s := range out[1:] {
		if w, inflight := c.Window(s.Brick); w != 16 || inflight != 0 {
			t.Fatalf("brick %d: window %v inflight %d, want 16 and 0", s.Brick, w, inflight)
		}
	}
	// After a timeout the window grows additively: +1/window per reply.
	halved := out[1].Brick
	id, out = mustWrite(t, c, nil)
	if !slices.ContainsFunc(out, func(s Send) bool { return s.Brick == halved }) {
		t.Fatalf("write did not go to brick %d: %+v", halved, out)
	}
	c.Receive(t0, halved, ack(id, wire.OK))
	if w, _ := c.Window(halved); w != 16+1.0/16 {
		t.Fatalf("brick %d: window %v after a reply in congestion avoidance, want 16.0625", halved, w)
	}
}

func writeThenRead(t *testing.T, c *Core, value []byte) (Cookie, uint64, []Send) {
	t.Helper()
	id, out := mustWrite(t, c, value)
	c.Receive(t0, out[0].Brick, ack(id, wire.OK))
	r := c.Receive(t0, out[1].Brick, ack(id, wire.OK))
	c.Receive(t0, out[2].Brick, ack(id, wire.OK))
	rid, rout, err := c.Read(t0, r[0].Cookie)
	if err != nil {
		t.Fatal(err)
	}
	if len(rout) != 2 {
		t.Fatalf("read sent to %d, want R=2", len(rout))
	}
	return r[0].Cookie, rid, rout
}

func TestReadFirstValidAnswer(t *testing.T) {
	v := []byte("session")
	bad := []byte("sessioN")
	cases := []struct {
		name    string
		replies []*wire.Msg // to rout[0], rout[1]
		want    error       // nil: value v
	}{
		{"first valid", []*wire.Msg{reply(0, wire.OK, v)}, nil},
		{"corrupt then valid", []*wire.Msg{reply(0, wire.OK, bad), reply(0, wire.OK, v)}, nil},
		{"lost then valid", []*wire.Msg{reply(0, wire.NotFound, nil), reply(0, wire.OK, v)}, nil},
		{"all corrupt", []*wire.Msg{reply(0, wire.OK, bad), reply(0, wire.Corrupt, nil)}, ErrStateCorrupt},
		{"all lost", []*wire.Msg{reply(0, wire.NotFound, nil), reply(0, wire.NotFound, nil)}, ErrStateLost},
		{"expired at brick", []*wire.Msg{reply(0, wire.Expired, nil), reply(0, wire.NotFound, nil)}, ErrStateExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCore(t, 4, nil)
			_, rid, rout := writeThenRead(t, c, v)
			var got []Result
			for i, m := range tc.replies {
				m.ID = rid
				got = append(got, c.Receive(t0, rout[i].Brick, m)...)
			}
			if len(got) != 1 {
				t.Fatalf("results %+v", got)
			}
			if tc.want == nil {
				if got[0].Err != nil || string(got[0].Value) != "session" {
					t.Fatalf("got %q %v", got[0].Value, got[0].Err)
				}
			} else if !errors.Is(got[0].Err, tc.want) {
				t.Fatalf("err %v, want %v", got[0].Err, tc.want)
			}
		})
	}
}

func TestReadExpiredCookie(t *testing.T) {
	c := newCore(t, 3, nil)
	ck := Cookie{Key: wire.Key{1}, Expiry: t0, Bricks: []uint16{1, 2}}
	if _, _, err := c.Read(t0, ck); !errors.Is(err, ErrStateExpired) {
		t.Fatalf("err %v", err)
	}
}

func TestReadSkipsDeadBricks(t *testing.T) {
	c := newCore(t, 4, nil)
	ck, _, _ := writeThenRead(t, c, []byte("x"))
	c.Down(t0, ck.Bricks[0], "killed")
	_, out, err := c.Read(t0, ck)
	if err != nil || len(out) != 1 || out[0].Brick != ck.Bricks[1] {
		t.Fatalf("read with one cookie brick dead: %v, sent %+v", err, out)
	}
	c.Down(t0, ck.Bricks[1], "killed")
	if _, _, err := c.Read(t0, ck); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("all cookie bricks dead: %v", err)
	}
}

func TestDownFailsPendingAndBeaconTimeout(t *testing.T) {
	c := newCore(t, 3, nil)
	id, out := mustWrite(t, c, nil)
	c.Receive(t0, out[0].Brick, ack(id, wire.OK))
	if r := c.Down(t0, out[1].Brick, "reset"); len(r) != 0 {
		t.Fatalf("one down, one still pending: %+v", r)
	}
	r := c.Down(t0, out[2].Brick, "reset")
	if len(r) != 1 || !errors.Is(r[0].Err, ErrUnavailable) {
		t.Fatalf("two down: %+v", r)
	}
	c.Tick(t0.Add(400 * time.Millisecond))
	if got := c.Live(); !slices.Equal(got, []uint16{out[0].Brick}) {
		t.Fatalf("live %v", got)
	}
	c.Tick(t0.Add(501 * time.Millisecond))
	if got := c.Live(); len(got) != 0 {
		t.Fatalf("live after beacon timeout %v", got)
	}
	c.Beacon(t0.Add(time.Second), 2, 2)
	if got := c.Live(); !slices.Equal(got, []uint16{2}) {
		t.Fatalf("live after beacon %v", got)
	}
	var kinds []string
	for _, ev := range c.Events() {
		kinds = append(kinds, ev.Kind)
	}
	if len(kinds) != 3+3+1 {
		t.Fatalf("events %v", kinds)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"W<WQ":    func(c *Config) { c.W, c.WQ = 2, 3 },
		"R>W":     func(c *Config) { c.R = 4 },
		"R=0":     func(c *Config) { c.R = 0 },
		"timeout": func(c *Config) { c.Timeout = 0 },
		"window":  func(c *Config) { c.InitialWindow = 0.5 },
	} {
		cfg := DefaultConfig()
		mod(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestCookieRoundTripAndCorruption(t *testing.T) {
	ck := Cookie{Key: wire.Key{9, 8, 7}, Expiry: time.UnixMilli(1_700_000_123_456), Checksum: 0xabcdef, Bricks: []uint16{3, 1}}
	got, err := ParseCookie(ck.String())
	if err != nil || got.Key != ck.Key || !got.Expiry.Equal(ck.Expiry) || got.Checksum != ck.Checksum || !slices.Equal(got.Bricks, ck.Bricks) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	b, _ := ck.MarshalBinary()
	for i := range b {
		for bit := range 8 {
			d := slices.Clone(b)
			d[i] ^= 1 << bit
			if _, err := DecodeCookie(d); !errors.Is(err, ErrCookieCorrupt) {
				t.Fatalf("flip byte %d bit %d: %v", i, bit, err)
			}
		}
	}
	if _, err := ParseCookie("!!"); !errors.Is(err, ErrCookieCorrupt) {
		t.Fatal(err)
	}
}

func FuzzDecodeCookie(f *testing.F) {
	b, _ := Cookie{Key: wire.Key{1}, Expiry: time.UnixMilli(5), Bricks: []uint16{1, 2}}.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCookie(b)
		if err != nil {
			if !errors.Is(err, ErrCookieCorrupt) {
				t.Fatalf("error %v does not wrap ErrCookieCorrupt", err)
			}
			return
		}
		again, err := c.MarshalBinary()
		if err != nil || !slices.Equal(again, b) {
			t.Fatalf("accepted %x but re-encodes to %x (%v)", b, again, err)
		}
	})
}
