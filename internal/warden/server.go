package warden

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/kernelfault"
)

// SocketPath is run id's request socket.
func SocketPath(runID string) string { return filepath.Join(Dir, runID+".sock") }

// Server serves one run's requests; Renewed receives a value on every
// accepted renewal (the lease), Logf every refusal.
type Server struct {
	Run        string
	Controller int // the only pid allowed to connect
	Journal    *Journal
	Renewed    chan struct{}
	Logf       func(format string, args ...any)

	mu     sync.Mutex
	last   uint64
	lapsed string // why the lease lapsed; then every request is refused

	applied map[string]kernelfault.Fault // by id, not yet reverted
}

// Listen creates the run's socket, readable and writable by root only.
func Listen(runID string) (*net.UnixListener, error) {
	path := SocketPath(runID)
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Serve accepts connections until ctx ends or ln closes.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		go s.serveConn(conn)
	}
}

// peerPid is the pid of the process at the other end of conn (SO_PEERCRED).
func peerPid(conn *net.UnixConn) (int, int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, cerr
	}
	return int(cred.Pid), int(cred.Uid), nil
}

func (s *Server) serveConn(conn *net.UnixConn) {
	defer conn.Close()
	pid, uid, err := peerPid(conn)
	if err != nil || pid != s.Controller || uid != os.Geteuid() {
		s.Logf("refused connection from pid %d uid %d (want the controller, pid %d): %v", pid, uid, s.Controller, err)
		_, _ = io.WriteString(conn, "refused: not the controller\n")
		return
	}
	r := bufio.NewReaderSize(conn, MaxRequest+1)
	for {
		line, err := readLine(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.Logf("refused: %v", err)
				_, _ = io.WriteString(conn, "refused: "+err.Error()+"\n")
			}
			return
		}
		ans, err := s.handle(line)
		if err != nil {
			s.Logf("refused request %q: %v", truncate(line), err)
			ans = "refused: " + err.Error()
		}
		ans = strings.ReplaceAll(ans, "\n", " ")
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, ans+"\n"); err != nil {
			return
		}
	}
}

// readLine reads one line of at most MaxRequest bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("request over %d bytes", MaxRequest)
	}
	if err != nil {
		return nil, err
	}
	return line[:len(line)-1], nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// handle decodes and applies one request; its answer is "ok" and, for
// inject and revert, the evidence.
func (s *Server) handle(line []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, err := Decode(line, s.Run, s.last)
	if err != nil {
		return "", err
	}
	if s.lapsed != "" {
		return "", fmt.Errorf("lease lapsed (%s): this warden reverted the run's faults and takes no more requests", s.lapsed)
	}
	s.last = req.Seq // a request that fails to apply is not replayable either
	s.renewed()
	if req.Op == OpInject || req.Op == OpRevert {
		// The controller waits for this answer, alive: an inject that
		// proves a balloon or a delay may take longer than the lease.
		defer s.renewWhile()()
	}
	ans := "ok"
	switch req.Op {
	case OpRecord:
		err = s.Journal.Add(req.Kind, req.Name)
	case OpRenew: // renewed above, as by every accepted request
	case OpInject:
		var ev string
		if ev, err = s.inject(*req.Fault); err == nil {
			ans += " " + ev
		}
	case OpRevert:
		var ev string
		if ev, err = s.revert(req.ID); err == nil {
			ans += " " + ev
		}
	}
	return ans, err
}

// renewed renews the lease (a value on Renewed, never blocking).
func (s *Server) renewed() {
	select {
	case s.Renewed <- struct{}{}:
	default:
	}
}

// renewWhile renews the lease every RenewEvery until the returned
// function is called.
func (s *Server) renewWhile() (done func()) {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(RenewEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				s.renewed()
				return
			case <-t.C:
				s.renewed()
			}
		}
	}()
	return func() { close(stop) }
}

// inject applies f and journals it; a fault id is applied once.
func (s *Server) inject(f kernelfault.Fault) (string, error) {
	if s.applied == nil {
		s.applied = map[string]kernelfault.Fault{}
	}
	if _, ok := s.applied[f.ID]; ok {
		return "", fmt.Errorf("fault %s is already applied", f.ID)
	}
	ev, err := kernelfault.Apply(f)
	if err != nil {
		return "", fmt.Errorf("fault %s: %w", f.ID, err)
	}
	s.applied[f.ID] = f
	if err := s.Journal.add(Record{Kind: KindFault, Name: f.ID, Fault: &f}); err != nil {
		_, rerr := kernelfault.Revert(f)
		delete(s.applied, f.ID)
		return "", errors.Join(fmt.Errorf("fault %s applied but not journalled, so reverted: %w", f.ID, err), rerr)
	}
	return ev, nil
}

// revert reverts a fault this warden applied.
func (s *Server) revert(id string) (string, error) {
	f, ok := s.applied[id]
	if !ok {
		return "", fmt.Errorf("fault %s was not applied by this warden (or is reverted)", id)
	}
	ev, err := kernelfault.Revert(f)
	if err != nil {
		return "", fmt.Errorf("revert fault %s: %w", id, err)
	}
	delete(s.applied, id)
	return ev, s.Journal.Add(KindUnfault, id)
}

// Lapse reverts every fault the warden applied and every burner or
// balloon the controller recorded, restores every object a backend's
// Remover can restore (Remover.Restore: a docker container unpaused and
// its rules deleted), refuses every later request, and returns what it
// reverted, one line each.
func (s *Server) Lapse(why string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lapsed = why
	recs, err := Read(Path(s.Run))
	if err != nil { // revert what it holds in memory all the same
		s.Logf("lapse: read journal: %v", err)
		recs = nil
		for id, f := range s.applied {
			recs = append(recs, Record{Kind: KindFault, Name: id, Fault: &f})
		}
	}
	var out []string
	var errs []error
	for _, f := range slices.Backward(Applied(recs)) {
		one, err := RevertFaults([]Record{{Kind: KindFault, Name: f.ID, Fault: &f}}, s.Run)
		out = append(out, one...)
		if err != nil {
			errs = append(errs, err) // left in the journal: cleanup retries it
			continue
		}
		delete(s.applied, f.ID)
		_ = s.Journal.Add(KindUnfault, f.ID)
	}
	restored, rerrs := restoreRegistered(recs)
	errs = append(errs, rerrs...)
	aux := slices.DeleteFunc(recs, func(r Record) bool { return r.Kind != KindAux })
	killed, _ := RevertFaults(aux, s.Run)
	out = append(out, restored...)
	return append(out, killed...), errors.Join(errs...)
}
