package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redises are the private Redis servers of a run: a single one (the peer
// as it always was) and a primary with two replicas on the same loopback —
// SSM's three copies of each write, waited for with WAIT 1 as SSM waits
// for WQ=2 of its W=3 bricks.
type redises struct {
	single, primary string
	cmds            []*exec.Cmd
	dir             string // the servers' working directories, removed by stop
}

// startRedises starts redis-server on ports port…port+3 of 127.0.0.1,
// without persistence, and returns once both replicas are in sync.
func startRedises(port int) (*redises, error) {
	r := &redises{}
	// A replica's full sync writes the primary's snapshot to dump.rdb in
	// its working directory whatever --save says: each server works in a
	// directory of its own under a temporary one, not the caller's.
	dir, err := os.MkdirTemp("", "faultbench-bench-redis-")
	if err != nil {
		return nil, err
	}
	r.dir = dir
	start := func(p int, args ...string) (string, error) {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		wd := filepath.Join(dir, strconv.Itoa(p))
		if err := os.Mkdir(wd, 0o755); err != nil {
			return "", err
		}
		cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(p), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--dir", wd}, args...)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("redis-server: %w (apt-get install redis-server)", err)
		}
		r.cmds = append(r.cmds, cmd)
		for range 300 {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return addr, nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return "", fmt.Errorf("redis-server on %s did not come up", addr)
	}
	if r.single, err = start(port); err != nil {
		r.stop()
		return nil, err
	}
	if r.primary, err = start(port+1, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"); err != nil {
		r.stop()
		return nil, err
	}
	for i := 2; i <= 3; i++ {
		if _, err := start(port+i, "--replicaof", "127.0.0.1", strconv.Itoa(port+1)); err != nil {
			r.stop()
			return nil, err
		}
	}
	if err := waitReplicas(r.primary, 2); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// waitReplicas waits until the primary at addr counts n replicas online.
func waitReplicas(addr string, n int) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	var info string
	for range 500 {
		var err error
		info, err = c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Count(info, "state=online") >= n {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis primary %s: %d replicas not online: %s", addr, n, info)
}

// pids are the process ids of servers from to to-1 (0 the single
// one, 1 the primary, 2 and 3 its replicas).
func (r *redises) pids(from, to int) []int {
	var p []int
	for _, c := range r.cmds[from:to] {
		p = append(p, c.Process.Pid)
	}
	return p
}

func (r *redises) stop() {
	for _, c := range r.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// errNotReplicated is a SET whose WAIT 1 found no replica holding it in
// time: the peer's counterpart of an SSM write that timed out.
var errNotReplicated = errors.New("not replicated: WAIT 1 returned 0")

// benchGoRedis runs n SETs, then n GETs of the keys set, through go-redis
// with clients connections, measured as SSM is (measure). With wait > 0
// each SET is pipelined with WAIT 1 <wait in ms> — one round trip, as an
// SSM write is one send to the bricks — and counts as failed unless a
// replica acknowledged it.
func benchGoRedis(addr string, pids []int, clients, n, size int, wait time.Duration) (set, get result, err error) {
	peer := peers[1]
	if wait > 0 {
		peer = peers[2]
	}
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: clients, MinIdleConns: clients})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		return set, get, fmt.Errorf("redis %s: %w", addr, err)
	}
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	key := func(c int) string { return "ssm-bench-" + strconv.Itoa(c) }
	waitMs := wait.Milliseconds()
	pids = append(pids, 0)
	set = measure(peer, "SET", pids, clients, n, func(i int) error {
		if wait == 0 {
			return c.Set(ctx, key(i), value, 0).Err()
		}
		p := c.Pipeline()
		setCmd := p.Set(ctx, key(i), value, 0)
		waitCmd := p.Do(ctx, "WAIT", 1, waitMs)
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
		if err := setCmd.Err(); err != nil {
			return err
		}
		if acked, err := waitCmd.Int64(); err != nil || acked < 1 {
			return errNotReplicated
		}
		return nil
	})
	get = measure(peer, "GET", pids, clients, n, func(i int) error {
		b, err := c.Get(ctx, key(i)).Bytes()
		if err == nil && len(b) != size {
			err = fmt.Errorf("get: %d bytes, want %d", len(b), size)
		}
		return err
	})
	return set, get, nil
}
