package ssm

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
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
	o := fault.Occurrence{Type: "slow", Node: 2, Duration: time.Minute, Params: map[string]string{"delay": "2ms"}}
	revert, err := injectSlow(context.Background(), tg, o)
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
	if _, err := injectSlow(context.Background(), controlTarget{addr: addr, token: "guess"}, o); err == nil {
		t.Fatal("slow with a wrong token succeeded")
	}
	// A front end has no control endpoint.
	if _, err := injectSlow(context.Background(), tg, fault.Occurrence{Type: "slow", Node: 1}); err == nil {
		t.Fatal("slow on a front end succeeded")
	}
	// A brick gone before the clear (restarted, crashed) took the fault
	// with it: nothing to revert, and no error.
	b2, addr2 := startBrick(t, "secret")
	tg2 := controlTarget{addr: addr2, token: "secret"}
	revert, err = injectSlow(context.Background(), tg2, o)
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
	for _, bad := range []string{"0", "x", "1001"} {
		o := fault.Occurrence{Type: "bitflip", Node: 2, Params: map[string]string{"count": bad}}
		if _, err := injectBitflip(context.Background(), tg, o); err == nil {
			t.Errorf("count %q accepted", bad)
		}
	}
	// An empty brick has nothing to flip: the injection fails rather than
	// pretending.
	o := fault.Occurrence{Type: "bitflip", Node: 2, Params: map[string]string{}}
	if _, err := injectBitflip(context.Background(), tg, o); err == nil {
		t.Error("bitflip on an empty brick succeeded")
	}
	if _, err := injectBitflip(context.Background(), fault.Target(controlTarget{addr: addr, token: "no"}), o); err == nil {
		t.Error("bitflip with a wrong token succeeded")
	}
}
