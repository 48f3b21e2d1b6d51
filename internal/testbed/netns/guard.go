package netns

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/testbed"
	"github.com/faultbench/faultbench/internal/warden"
)

// guard is the controller's side of the run's warden: a process in the
// host namespace that owns the run's journal and removes everything in it
// when this controller's pipe closes or its lease lapses. The controller
// journals every object through the warden's socket before creating it.
type guard struct {
	run  string
	cmd  *exec.Cmd
	pipe io.WriteCloser // never written: its closing is the controller's death
	done chan struct{}
	stop chan struct{}

	mu       sync.Mutex
	conn     net.Conn
	answers  *bufio.Reader
	seq      uint64
	released bool
	lapsed   bool // a renewal failed: the warden no longer holds the lease
	onLost   func(why string)
}

// notifyLost makes f run (once, outside the lock) when the lease is lost
// while the run holds the network.
func (g *guard) notifyLost(f func(why string)) {
	g.mu.Lock()
	g.onLost = f
	g.mu.Unlock()
}

// startGuard starts the warden (`EXE node warden`) for spec.RunID, waits
// (bounded) until it listens, connects, and renews the lease every
// warden.RenewEvery.
func startGuard(spec testbed.Spec) (*guard, error) {
	exe := spec.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	cfg := node.Config{Listen: "-", Options: map[string]string{"run": spec.RunID,
		"lease": warden.DefaultLease.String(), "controller": strconv.Itoa(os.Getpid())}}
	cmd := exec.Command(exe, append([]string{"node", warden.Kind}, cfg.Args()...)...)
	cmd.Env = append(append(os.Environ(), spec.Env...), testbed.RunIDEnv+"="+spec.RunID)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // no Pdeathsig: it must outlive us
	if spec.Dir != "" {
		if f, err := os.OpenFile(spec.Dir+"/warden.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			cmd.Stderr = f
			defer f.Close()
		}
	}
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start warden %s: %w", exe, err)
	}
	g := &guard{run: spec.RunID, cmd: cmd, pipe: pipe, done: make(chan struct{}), stop: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		line := ""
		if sc.Scan() {
			line = sc.Text()
		}
		ready <- line
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(g.done)
	}()
	fail := func(err error) (*guard, error) {
		_ = pipe.Close()
		_ = cmd.Process.Kill()
		<-g.done
		return nil, err
	}
	select {
	case line := <-ready:
		if line != "ready" {
			return fail(fmt.Errorf("warden did not start (see warden.log): %q", line))
		}
	case <-time.After(10 * time.Second):
		return fail(errors.New("warden did not answer within 10s"))
	}
	conn, err := net.Dial("unix", warden.SocketPath(spec.RunID))
	if err != nil {
		return fail(fmt.Errorf("connect to the warden: %w", err))
	}
	g.conn, g.answers = conn, bufio.NewReader(conn)
	go g.renew()
	return g, nil
}

// call sends one request and returns the warden's refusal, if any.
func (g *guard) call(op, kind, name string) error {
	_, err := g.send(warden.Request{Op: op, Kind: kind, Name: name})
	return err
}

// send sends one request (numbered here) and returns what follows the
// warden's "ok", or its refusal. A warden that does not answer within
// callTimeout is an error naming the operation; the connection is then
// closed (a late answer would pair with the wrong request) and the lease
// counts as lost.
func (g *guard) send(r warden.Request) (string, error) {
	ans, err := g.exchange(r)
	if err != nil && ans == "broken" {
		g.setLapsed(err.Error())
	}
	if err != nil {
		return "", err
	}
	return ans, nil
}

func (g *guard) exchange(r warden.Request) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		return "", errors.New("warden connection closed")
	}
	g.seq++
	r.Run, r.Seq = g.run, g.seq
	b, _ := json.Marshal(r)
	wait := callTimeout.get()
	if r.Op == warden.OpInject {
		wait = max(wait, injectTimeout)
	}
	_ = g.conn.SetDeadline(time.Now().Add(wait))
	_, err := g.conn.Write(append(b, '\n'))
	ans := ""
	if err == nil {
		ans, err = g.answers.ReadString('\n')
	}
	if err != nil {
		_ = g.conn.Close()
		g.conn = nil
		return "broken", fmt.Errorf("warden did not answer %s within %v: %w", r.Op, wait, err)
	}
	ans = strings.TrimSpace(ans)
	if rest, ok := strings.CutPrefix(ans, "ok"); ok {
		return strings.TrimSpace(rest), nil
	}
	return "", fmt.Errorf("warden %s", ans)
}

// callTimeout bounds one request. Tests shorten it.
var callTimeout = newDuration(10 * time.Second)

// injectTimeout bounds an inject, which proves its effect before the
// warden answers: a balloon may take up to 20 s to become resident
// (kernelfault's helper proof), a delay's round trips several seconds.
// The warden counts the lease as renewed while it works on a request.
const injectTimeout = 30 * time.Second

// duration is a time.Duration safe to change while goroutines read it.
type duration struct{ ns atomic.Int64 }

func newDuration(d time.Duration) *duration { x := &duration{}; x.ns.Store(int64(d)); return x }
func (d *duration) get() time.Duration      { return time.Duration(d.ns.Load()) }
func (d *duration) set(v time.Duration)     { d.ns.Store(int64(v)) }

// inject has the warden apply f and returns its evidence.
func (g *guard) inject(f kernelfault.Fault) (string, error) {
	return g.send(warden.Request{Op: warden.OpInject, Fault: &f})
}

// revert has the warden revert fault id and returns its evidence.
func (g *guard) revert(id string) (string, error) {
	return g.send(warden.Request{Op: warden.OpRevert, ID: id})
}

// Add journals an object through the warden before it is created.
func (g *guard) Add(kind, name string) error { return g.call(warden.OpRecord, kind, name) }

// renew renews the lease every RenewEvery until release.
func (g *guard) renew() {
	t := time.NewTicker(warden.RenewEvery)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-g.stop:
			return
		case <-g.done:
			g.setLapsed("the warden exited")
			return
		case <-t.C:
			if err := g.call(warden.OpRenew, "", ""); err != nil {
				g.setLapsed(err.Error())
				return
			}
			// A controller starved past its lease finds it lapsed even
			// if the warden has not yet said so.
			if gap := time.Since(last); gap > warden.DefaultLease {
				g.setLapsed(fmt.Sprintf("no renewal for %v, over the %v lease (a starved controller)", gap.Round(time.Millisecond), warden.DefaultLease))
				return
			}
			last = time.Now()
		}
	}
}

func (g *guard) setLapsed(why string) {
	g.mu.Lock()
	first := !g.lapsed && !g.released
	g.lapsed = true
	f := g.onLost
	g.mu.Unlock()
	if first && f != nil {
		f(why)
	}
}

// Lost reports whether the warden is gone (or refused a renewal) while the
// run still holds the network: its faults are no longer guaranteed to be
// reverted if this controller dies.
func (g *guard) Lost() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lapsed && !g.released
}

// release removes everything journalled, deletes the journal and ends the
// warden (which then finds nothing to remove). Safe twice.
func (g *guard) release() error {
	g.mu.Lock()
	if g.released {
		g.mu.Unlock()
		return nil
	}
	g.released = true
	close(g.stop)
	g.mu.Unlock()
	var errs []error
	recs, err := warden.Read(warden.Path(g.run))
	if err == nil {
		if _, err := warden.Remove(recs); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(warden.Path(g.run)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The warden removes its socket as it exits; a killed one cannot.
	defer os.Remove(warden.SocketPath(g.run))
	g.mu.Lock()
	if g.conn != nil {
		_ = g.conn.Close()
		g.conn = nil
	}
	_ = g.pipe.Close()
	g.mu.Unlock()
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		errs = append(errs, errors.New("warden did not exit within 10s of its pipe closing; killed"))
	}
	return errors.Join(errs...)
}
