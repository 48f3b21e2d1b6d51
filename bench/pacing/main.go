// Command pacing measures what precise pacing costs a generator on this
// machine, outside faultbench: a minimal keep-alive HTTP load loop in Go,
// one thread, level-triggered epoll over -c connections (as wrk2 runs),
// sending at -rate requests a second and reading each answer whole. It
// waits for the next send in one of two ways:
//
//   - timerfd: a timer armed for the next send's instant, as faultbench's
//     scheduler does (precise to microseconds);
//   - ms: epoll_wait's own timeout, in whole milliseconds, as wrk2 does
//     (every send due in that millisecond goes out together).
//
// It prints the CPU time per request of each (getrusage), alternating,
// -reps times. The difference is the price of waking precisely, which no
// change inside faultbench can remove (docs/benchmarks.md, "Pacing, and
// the run's own stalls").
//
//	go run ./bench/pacing -addr 127.0.0.1:8080 -path /page.html   # pinned: taskset -c 0 ...
//
// It only sends to loopback addresses.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "server host:port (loopback only)")
	path := flag.String("path", "/", "path to GET")
	rate := flag.Float64("rate", 16000, "requests per second")
	conns := flag.Int("c", 32, "keep-alive connections")
	dur := flag.Duration("d", 6*time.Second, "length of each run")
	reps := flag.Int("reps", 3, "runs of each mode, alternating")
	flag.Parse()
	if err := run(*addr, *path, *rate, *conns, *dur, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "pacing:", err)
		os.Exit(1)
	}
}

func run(addr, path string, rate float64, conns int, dur time.Duration, reps int) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return fmt.Errorf("-addr %q: want an IPv4 loopback host:port", addr)
	}
	if !(rate > 0) || conns < 1 || reps < 1 || dur <= 0 {
		return errors.New("-rate, -c, -d and -reps must be positive")
	}
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
	got := map[string][]float64{}
	for range reps {
		for _, mode := range []string{"timerfd", "ms"} {
			n, cpu, err := load(ap, req, rate, conns, dur, mode == "ms")
			if err != nil {
				return err
			}
			perReq := cpu.Seconds() / float64(n) * 1e6
			fmt.Printf("%-7s %d requests in %v: %.0f/s, %.1f µs CPU a request\n", mode, n, dur, float64(n)/dur.Seconds(), perReq)
			got[mode] = append(got[mode], perReq)
		}
	}
	for _, mode := range []string{"timerfd", "ms"} {
		slices.Sort(got[mode])
		fmt.Printf("median %-7s %.1f µs CPU a request\n", mode, got[mode][len(got[mode])/2])
	}
	return nil
}

type conn struct {
	fd   int
	buf  []byte
	got  int // bytes of the answer read so far
	want int // its length once the head is in; -1 before
}

// load sends at rate for dur and returns the answers read whole and the
// process's CPU time meanwhile. Bounded: it ends at dur whatever the server does.
func load(ap netip.AddrPort, req []byte, rate float64, conns int, dur time.Duration, msWaits bool) (int, time.Duration, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(ep)
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(tfd)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(tfd)}); err != nil {
		return 0, 0, err
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	byFD := map[int]*conn{}
	var idle []*conn
	defer func() {
		for fd := range byFD {
			unix.Close(fd)
		}
	}()
	for range conns {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0, 0, err
		}
		if err := unix.Connect(fd, sa); err != nil {
			unix.Close(fd)
			return 0, 0, fmt.Errorf("connect %v: %w", ap, err)
		}
		c := &conn{fd: fd, buf: make([]byte, 64<<10)}
		byFD[fd] = c
		idle = append(idle, c)
		if err := unix.SetNonblock(fd, true); err != nil {
			return 0, 0, err
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return 0, 0, err
		}
	}

	cpu0 := cpuTime()
	start := time.Now()
	end := start.Add(dur)
	gap := time.Duration(float64(time.Second) / rate)
	next, due, done := start, 0, 0
	events := make([]unix.EpollEvent, 128)
	var expiry [8]byte
	for now := time.Now(); now.Before(end); now = time.Now() {
		for ; !next.After(now); next = next.Add(gap) {
			due++
		}
		for ; due > 0 && len(idle) > 0; due-- {
			c := idle[len(idle)-1]
			idle = idle[:len(idle)-1]
			if _, err := unix.Write(c.fd, req); err != nil {
				return 0, 0, err
			}
			c.got, c.want = 0, -1
		}
		wait := -1
		if d := time.Until(next); msWaits {
			wait = int((d + time.Millisecond - 1) / time.Millisecond)
		} else {
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Microsecond)))}
			if err := unix.TimerfdSettime(tfd, 0, &spec, nil); err != nil {
				return 0, 0, err
			}
		}
		n, err := unix.EpollWait(ep, events, wait)
		if err != nil && err != unix.EINTR {
			return 0, 0, err
		}
		for _, e := range events[:max(n, 0)] {
			if int(e.Fd) == tfd {
				unix.Read(tfd, expiry[:])
				continue
			}
			c := byFD[int(e.Fd)]
			finished, err := c.readAnswer()
			if err != nil {
				return 0, 0, err
			}
			if finished {
				done++
				idle = append(idle, c)
			}
		}
	}
	return done, cpuTime() - cpu0, nil
}

// readAnswer reads what the socket holds of the answer in flight and
// reports whether it is whole (head, then Content-Length bytes).
func (c *conn) readAnswer() (bool, error) {
	for {
		n, err := unix.Read(c.fd, c.buf[c.got:])
		switch {
		case err == unix.EAGAIN:
			return false, nil
		case err != nil:
			return false, err
		case n == 0:
			return false, errors.New("the server closed a connection")
		}
		c.got += n
		if c.want < 0 {
			if i := bytes.Index(c.buf[:c.got], []byte("\r\n\r\n")); i >= 0 {
				length, err := contentLength(c.buf[:i])
				if err != nil {
					return false, err
				}
				c.want = i + 4 + length
			}
		}
		if c.want >= 0 && c.got >= c.want {
			return true, nil
		}
		if c.got == len(c.buf) { // a long body: keep counting, drop the bytes
			if c.want < 0 {
				return false, errors.New("an answer's head is longer than 64 KiB")
			}
			c.want -= c.got
			c.got = 0
		}
	}
}

func contentLength(head []byte) (int, error) {
	for _, line := range bytes.Split(head, []byte("\r\n")) {
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(bytes.TrimSpace(k), []byte("Content-Length")) {
			return strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	return 0, errors.New("an answer without Content-Length")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
