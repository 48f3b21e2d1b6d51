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
	"syscall"
	"time"

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
			return fail(fmt.Errorf("warden did not start (see log): %q", line))
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
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == nil {
		return errors.New("warden connection closed")
	}
	g.seq++
	b, _ := json.Marshal(Request{Op: op, Run: g.run, Seq: g.seq, Kind: kind, Name: name})
	_ = g.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := g.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("warden: %w", err)
	}
	ans, err := g.answers.ReadString('\n')
	if err != nil {
		return fmt.Errorf("warden did not answer: %w", err)
	}
	if ans = strings.TrimSpace(ans); ans != "ok" {
		return fmt.Errorf("warden %s", ans)
	}
	return nil
}

// Add journals an object through the warden before it is created.
func (g *Client) Add(kind, name string) error { return g.call(OpRecord, kind, name) }

// renew renews the lease every RenewEvery until release.
func (g *Client) renew() {
	t := time.NewTicker(RenewEvery)
	defer t.Stop()
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
