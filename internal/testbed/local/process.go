package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/placement"
)

// spawner forks every node from one goroutine locked to its OS thread, so
// that Pdeathsig (which fires when the forking thread exits) fires exactly
// when the controller process dies or the spawner is closed — never because
// the Go runtime retired a thread.
type spawner struct {
	mu     sync.Mutex
	reqs   chan func()
	closed bool
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns, its thread exits,
		// and any child still alive gets its Pdeathsig.
		for f := range s.reqs {
			f()
		}
	}()
	return s
}

// start starts cmd on the spawner's thread with its own process group and
// Pdeathsig = SIGKILL. launch, when not nil, runs on that thread around the
// start (containment places the thread's children in a cgroup with it).
// cpus, when not empty, is the CPU affinity cmd is born with: the thread
// takes it for the fork, which the child and every thread and process it
// makes inherit, then takes back its own — so a node restarted while the
// controller is pinned elsewhere (workload.cpus) still runs on the node
// CPUs.
func (s *spawner) start(cmd *exec.Cmd, launch func(start func() error) error, cpus []int) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStopped
	}
	errc := make(chan error, 1)
	if launch == nil {
		launch = func(start func() error) error { return start() }
	}
	s.reqs <- func() { errc <- withAffinity(cpus, func() error { return launch(cmd.Start) }) }
	return <-errc
}

// withAffinity runs f on the calling thread with its CPU affinity set to
// cpus (unchanged when cpus is empty), and restores the thread's own after.
// The caller's goroutine must be locked to its thread.
func withAffinity(cpus []int, f func() error) error {
	if len(cpus) == 0 {
		return f()
	}
	own, err := placement.Allowed()
	if err != nil {
		return err
	}
	if err := placement.Pin(0, cpus); err != nil {
		return err
	}
	defer func() { _ = placement.Pin(0, own) }()
	return f()
}

func (s *spawner) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.reqs)
	}
}

// reaper is the controller's end of the reaper protocol (see node.Reap).
type reaper struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	pipe io.WriteCloser
	done chan struct{}
}

func startReaper(exe string, env []string) (*reaper, error) {
	cmd := exec.Command(exe, "node", node.ReaperKind)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // deliberately no Pdeathsig: it must outlive us
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reaper %s: %w", exe, err)
	}
	r := &reaper{cmd: cmd, pipe: pipe, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.done) }()
	return r, nil
}

func (r *reaper) send(sign byte, pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pipe != nil {
		_, _ = fmt.Fprintf(r.pipe, "%c%d\n", sign, pgid)
	}
}

// close ends the reaper, which kills whatever group is still listed; safe twice.
func (r *reaper) close() {
	r.mu.Lock()
	if r.pipe != nil {
		_ = r.pipe.Close()
		r.pipe = nil
	}
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(3 * time.Second):
		_ = r.cmd.Process.Kill()
	}
}

// proc is one started node process (the leader of its process group).
type proc struct {
	cmd      *exec.Cmd
	pgid     int
	done     chan struct{} // closed when the process has exited and been reaped
	err      error         // Wait's result, valid after done
	expected bool          // we ended it; its exit is not a failure (guarded by nodeProc.mu)
}

func (p *proc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.pgid, sig)
}

// end stops the group: SIGTERM first when grace > 0, SIGKILL after grace,
// and waits (bounded) until the leader has exited.
func (p *proc) end(grace time.Duration) error {
	p.expected = true
	if grace > 0 {
		p.signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
			p.signal(syscall.SIGKILL) // children the leader left behind
			return nil
		case <-time.After(grace):
		}
	}
	p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("process group %d did not exit after SIGKILL", p.pgid)
	}
}

// blackhole listens on addr with an accept backlog of zero and never accepts,
// so the kernel drops SYNs beyond the first and clients' connects time out, as
// with a host that is down. The port is retried briefly because a killed
// process's socket can take a moment to go.
func blackhole(addr string) (fd int, err error) {
	host, portStr, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host).To4()
	port, _ := strconv.Atoi(portStr)
	if ip == nil {
		return -1, fmt.Errorf("blackhole %s: not an IPv4 address", addr)
	}
	sa := &syscall.SockaddrInet4{Port: port, Addr: [4]byte(ip)}
	for try := 0; try < 40; try++ {
		fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		if err = syscall.Bind(fd, sa); err == nil {
			if err = syscall.Listen(fd, 0); err == nil {
				return fd, nil
			}
		}
		_ = syscall.Close(fd)
		time.Sleep(25 * time.Millisecond)
	}
	return -1, fmt.Errorf("blackhole %s: %w", addr, err)
}

// lastLine returns the last non-empty line of a log file, for error messages.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 4096
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(st.Size()-tail, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

var errNotReady = errors.New("not ready")

// socketsOf returns the socket inodes open in any process of group pgid.
func socketsOf(pgid int) map[string]bool {
	inodes := map[string]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid pgrp ...
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + e.Name() + "/fd")
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name())
			if inode, ok := strings.CutPrefix(link, "socket:["); ok && err == nil {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	return inodes
}
