package warden

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
)

// Client is the controller's side of the run's warden: a process in the
// host namespace that owns the run's journal and removes everything in it
// when this controller's pipe closes or its lease lapses. The controller
// journals every object through the warden's socket before creating it.
type Client struct {
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
func (g *Client) NotifyLost(f func(why string)) {
	g.mu.Lock()
	g.onLost = f
	g.mu.Unlock()
}

// ClientSpec says which warden to start.
type ClientSpec struct {
	RunID      string   // the run's id (12 hex digits)
	Executable string   // the binary holding the warden node kind; default os.Executable()
	Env        []string // appended to the warden's environment
	Dir        string   // where warden.log goes; "" for none
}

// RunIDEnv is testbed.RunIDEnv (the warden may not import testbed).
const RunIDEnv = "FAULTBENCH_RUN_ID"

// Pid is the warden's pid.
func (g *Client) Pid() int { return g.cmd.Process.Pid }

// StartClient starts the warden (`EXE node warden`) for spec.RunID, waits
// (bounded) until it listens, connects, and renews the lease every
// RenewEvery.
func StartClient(spec ClientSpec) (*Client, error) {
	exe := spec.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	cfg := node.Config{Listen: "-", Options: map[string]string{"run": spec.RunID,
		"lease": DefaultLease.String(), "controller": strconv.Itoa(os.Getpid())}}
	cmd := exec.Command(exe, append([]string{"node", Kind}, cfg.Args()...)...)
	cmd.Env = append(append(os.Environ(), spec.Env...), RunIDEnv+"="+spec.RunID)
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
	g := &Client{run: spec.RunID, cmd: cmd, pipe: pipe, done: make(chan struct{}), stop: make(chan struct{})}
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
	fail := func(err error) (*Client, error) {
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
	conn, err := net.Dial("unix", SocketPath(spec.RunID))
	if err != nil {
		return fail(fmt.Errorf("connect to the warden: %w", err))
	}
	g.conn, g.answers = conn, bufio.NewReader(conn)
	go g.renew()
	return g, nil
}

// call sends one request and returns the warden's refusal, if any.
func (g *Client) call(op, kind, name string) error {
	_, err := g.send(Request{Op: op, Kind: kind, Name: name})
	return err
}

// CallTimeout bounds one request; an inject waits at least injectWait,
// since it proves its effect before the warden answers (a delay's round
// trips, a balloon becoming resident: up to 20 s). The warden counts the
// lease as renewed while it works on a request. Tests shorten it.
var CallTimeout = NewDuration(10 * time.Second)

const injectWait = 30 * time.Second

// Duration is a time.Duration safe to change while goroutines read it.
type Duration struct{ ns atomic.Int64 }

// NewDuration returns a Duration holding d.
func NewDuration(d time.Duration) *Duration { x := &Duration{}; x.ns.Store(int64(d)); return x }

// Get returns the duration.
func (d *Duration) Get() time.Duration { return time.Duration(d.ns.Load()) }

// Set changes the duration.
func (d *Duration) Set(v time.Duration) { d.ns.Store(int64(v)) }

// send sends one request (numbered here) and returns what follows the
// warden's "ok", or its refusal. A warden that does not answer in time
// is an error naming the operation; the connection is then closed (a
// late answer would pair with the wrong request) and the lease counts as
// lost.
func (g *Client) send(r Request) (string, error) {
	ans, err := g.exchange(r)
	if err != nil && ans == "broken" {
		g.setLapsed(err.Error())
	}
	if err != nil {
		return "", err
	}
	return ans, nil
}

func (g *Client) exchange(r Request) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		return "", errors.New("warden connection closed")
	}
	g.seq++
	r.Run, r.Seq = g.run, g.seq
	b, _ := json.Marshal(r)
	wait := CallTimeout.Get()
	if r.Op == OpInject {
		wait = max(wait, injectWait)
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

// Inject has the warden apply f (a kernel fault it then holds: a delayer,
// a helper process) and returns its evidence; the warden journals it, so
// its lease's lapse or this controller's death reverts it.
func (g *Client) Inject(f kernelfault.Fault) (string, error) {
	return g.send(Request{Op: OpInject, Fault: &f})
}

// Revert has the warden revert fault id and returns its evidence.
func (g *Client) Revert(id string) (string, error) {
	return g.send(Request{Op: OpRevert, ID: id})
}

// Add journals an object through the warden before it is created.
func (g *Client) Add(kind, name string) error { return g.call(OpRecord, kind, name) }

// renew renews the lease every RenewEvery until release.
func (g *Client) renew() {
	t := time.NewTicker(RenewEvery)
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
			if err := g.call(OpRenew, "", ""); err != nil {
				g.setLapsed(err.Error())
				return
			}
			// A controller starved past its lease finds it lapsed even
			// if the warden has not yet said so.
			if gap := time.Since(last); gap > DefaultLease {
				g.setLapsed(fmt.Sprintf("no renewal for %v, over the %v lease (a starved controller)", gap.Round(time.Millisecond), DefaultLease))
				return
			}
			last = time.Now()
		}
	}
}

func (g *Client) setLapsed(why string) {
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
func (g *Client) Lost() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lapsed && !g.released
}

// release removes everything journalled, deletes the journal and ends the
// warden (which then finds nothing to remove). Safe twice.
func (g *Client) Release() error {
	g.mu.Lock()
	if g.released {
		g.mu.Unlock()
		return nil
	}
	g.released = true
	close(g.stop)
	g.mu.Unlock()
	var errs []error
	recs, err := Read(Path(g.run))
	if err == nil {
		if _, err := Remove(recs); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(Path(g.run)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The warden removes its socket as it exits; a killed one cannot.
	defer os.Remove(SocketPath(g.run))
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
