package ssm

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/systems/ssm/brick"
)

// controlTarget is a fault target with one brick's control endpoint.
type controlTarget struct {
	addr, token string
}

func (controlTarget) Size() int { return 2 }
func (c controlTarget) SSMControl(n int) (string, string, error) {
	if n != 2 {
		return "", "", errors.New("not a brick")
	}
	return c.addr, c.token, nil
}

func startBrick(t *testing.T, token string) (*brick.Brick, string) {
	t.Helper()
	cfg := brick.DefaultConfig()
	cfg.ID, cfg.ControlToken = 2, token
	b, err := brick.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve(ln)
	t.Cleanup(func() { b.Close() })
	return b, ln.Addr().String()
}

// slow goes in through the brick's control endpoint with the run's token
// and is cleared by its revert; a brick that is gone when the fault clears
// took the fault with it, so that revert is not an error.
func TestSlowThroughControl(t *testing.T) {
	_, addr := startBrick(t, "secret")
	tg := controlTarget{addr: addr, token: "secret"}
	o := fault.Occurrence{Type: "slow", Node: 2, Duration: time.Minute}
	revert, err := injectSlow(context.Background(), tg, o, &SlowParams{Delay: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := postControl(context.Background(), tg, o, 2, brick.ControlRequest{Action: "slow", Delay: "2ms"})
	if err != nil || st.Slow != "2ms" {
		t.Fatalf("state after slow: %+v %v", st, err)
	}
	if err := revert(); err != nil {
		t.Fatal(err)
	}
	if err := revert(); err != nil {
		t.Fatalf("second revert: %v", err)
	}
	// A wrong token is refused, and named.
	if _, err := injectSlow(context.Background(), controlTarget{addr: addr, token: "guess"}, o, NewSlowParams()); err == nil {
		t.Fatal("slow with a wrong token succeeded")
	}
	// A front end has no control endpoint.
	if _, err := injectSlow(context.Background(), tg, fault.Occurrence{Type: "slow", Node: 1}, NewSlowParams()); err == nil {
		t.Fatal("slow on a front end succeeded")
	}
	// A brick gone before the clear (restarted, crashed) took the fault
	// with it: nothing to revert, and no error.
	b2, addr2 := startBrick(t, "secret")
	tg2 := controlTarget{addr: addr2, token: "secret"}
	revert, err = injectSlow(context.Background(), tg2, o, NewSlowParams())
	if err != nil {
		t.Fatal(err)
	}
	b2.Close()
	if err := revert(); err != nil {
		t.Fatalf("revert on a brick that is gone: %v", err)
	}
}

func TestBitflipParams(t *testing.T) {
	_, addr := startBrick(t, "secret")
	tg := controlTarget{addr: addr, token: "secret"}
	// An empty brick has nothing to flip: the injection fails rather than
	// pretending.
	o := fault.Occurrence{Type: "bitflip", Node: 2}
	if _, err := injectBitflip(context.Background(), tg, o, NewBitflipParams()); err == nil {
		t.Error("bitflip on an empty brick succeeded")
	}
	if _, err := injectBitflip(context.Background(), fault.Target(controlTarget{addr: addr, token: "no"}), o, NewBitflipParams()); err == nil {
		t.Error("bitflip with a wrong token succeeded")
	}
}

// A brick Pinpoint took offline is stopped for the rest of the run: brick
// faults aimed at it act on nothing and say so in the timeline, instead of
// failing the run (a recurring fault on a brick with a persistent fault is
// what takes it offline). Without a timeline to say so, they still fail.
func TestFaultOnOfflineBrick(t *testing.T) {
	r := &rig{addrs: map[int]string{3: "127.0.0.1:1"}, bricks: []int{3}, token: "t"}
	c := &ssmTarget{rig: r}
	var events []record.Event
	for _, typ := range []string{"bitflip", "slow"} {
		o := fault.Occurrence{Type: typ, Node: 3, Duration: time.Second}
		inj := map[string]fault.Injector{"bitflip": fault.WithParams(NewBitflipParams, injectBitflip), "slow": fault.WithParams(NewSlowParams, injectSlow)}[typ]
		o.Params = fault.ParamsFor(inj)
		inject := inj.Inject
		r.offline = nil
		if _, err := inject(context.Background(), c, o); err == nil {
			t.Fatalf("%s on a brick that does not answer succeeded", typ)
		}
		r.takeOffline(3)
		if _, err := inject(context.Background(), c, o); !errors.Is(err, ErrBrickOffline) {
			t.Fatalf("%s on an offline brick with no timeline: %v, want ErrBrickOffline", typ, err)
		}
		r.emit = func(e record.Event) { events = append(events, e) }
		revert, err := inject(context.Background(), c, o)
		if err != nil {
			t.Fatalf("%s on an offline brick: %v", typ, err)
		}
		if err := revert(); err != nil {
			t.Fatalf("%s revert: %v", typ, err)
		}
		r.emit = nil
	}
	if len(events) != 2 || events[0].Kind != "system.ssm.fault_on_offline" || events[0].Node != 3 || events[1].Fault != "slow" {
		t.Fatalf("events %+v, want one system.ssm.fault_on_offline per fault", events)
	}
}

// target stack (§5.5's flipped stack pointer) crashes the brick at once.
func TestBitflipStackCrashes(t *testing.T) {
	crashed := make(chan string, 1)
	cfg := brick.DefaultConfig()
	cfg.ID, cfg.ControlToken = 2, "secret"
	cfg.OnCrash = func(reason string) { crashed <- reason }
	b, err := brick.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	o := fault.Occurrence{Type: "bitflip", Node: 2}
	p := NewBitflipParams()
	p.Target = "stack"
	if _, err := injectBitflip(context.Background(), controlTarget{addr: b.Addr(), token: "secret"}, o, p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("the brick did not crash")
	}
}
