package ssm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
	"github.com/spf13/pflag"
)

// The test binary doubles as `faultbench node KIND` when its first argument
// is "node", so bricks can run as real processes that really exit.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		var cfg node.Config
		fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
		node.BindFlags(fs, &cfg)
		if err := fs.Parse(os.Args[3:]); err != nil {
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := node.Run(ctx, os.Args[2], cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type brickProc struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

func startBrickProc(t *testing.T, id int, addr string) *brickProc {
	t.Helper()
	cfg := node.Config{Listen: addr, Node: id, Options: map[string]string{"control_token": "tok"}}
	cmd := exec.Command(os.Args[0], append([]string{"node", BrickKind}, cfg.Args()...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &brickProc{cmd: cmd, addr: addr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	waitHealth(t, addr)
	return p
}

func controlPost(t *testing.T, addr, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/control", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("control %s: %d", body, resp.StatusCode)
	}
}

// TestBrickProcesses runs 4 bricks as processes: one crashes through the
// control endpoint (exit status 70) and another is SIGKILLed; sessions
// written before stay readable, and a restarted brick serves again.
func TestBrickProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	procs := map[int]*brickProc{}
	var addrs []string
	for id := 1; id <= 4; id++ {
		procs[id] = startBrickProc(t, id, freeAddr(t))
		addrs = append(addrs, procs[id].addr)
	}
	cfg := stub.DefaultConfig()
	cfg.Bricks = addrs
	cfg.Timeout = 500 * time.Millisecond
	s, err := stub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitLive(ctx, 4); err != nil {
		t.Fatal(err)
	}
	v := []byte("session of user 1")
	ck, err := s.Write(ctx, wire.Key{1}, v, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// Crash one of the two bricks holding the session.
	victim := procs[int(ck.Bricks[0])]
	controlPost(t, victim.addr, `{"action":"crash"}`)
	select {
	case err := <-victim.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != CrashExit {
			t.Fatalf("crashed brick exited with %v, want status %d", err, CrashExit)
		}
		victim.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("brick did not exit on crash")
	}
	if got, err := s.Read(ctx, ck); err != nil || string(got) != string(v) {
		t.Fatalf("read after crashing brick %d: %q %v", ck.Bricks[0], got, err)
	}
	// SIGKILL a brick that does not hold the session, then restart the
	// crashed one on its address: writes and reads go on.
	for id, p := range procs {
		if uint16(id) != ck.Bricks[0] && uint16(id) != ck.Bricks[1] {
			_ = p.cmd.Process.Kill()
			break
		}
	}
	restarted := startBrickProc(t, int(ck.Bricks[0]), victim.addr)
	for range 200 { // until the stub has heard the restarted brick
		if len(s.Live()) >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for seq := range 20 {
		v := []byte("value " + strconv.Itoa(seq))
		ck, err := s.Write(ctx, wire.Key{2}, v, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatalf("write %d: %v (live %v)", seq, err, s.Live())
		}
		if got, err := s.Read(ctx, ck); err != nil || string(got) != string(v) {
			t.Fatalf("read %d: %q %v", seq, got, err)
		}
	}
	_ = restarted
}
