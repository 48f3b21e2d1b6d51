//go:build pressdemo

// The demo runs a 4-node cluster as real processes (this test binary
// re-executed) behind faultnet proxies, offers 200 req/s and prints the
// successful responses per second around a fault on node 2 at t=6s..12s:
//
//	MODE=perf FAULT=hang go test -tags pressdemo -run TestDemo -v ./internal/systems/press/
//
// MODE is perf, ha or robust; FAULT is hang (SIGSTOP/SIGCONT), crash
// (SIGKILL, then a restart of node 2 alone) or link (every link of node 2
// blackholed). It takes ~25 s and is not part of the normal test run.
package press

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/faultnet"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/workload"
)

func TestHelperNode(t *testing.T) {
	js := os.Getenv("PRESS_NODE")
	if js == "" {
		t.Skip()
	}
	var cfg Config
	json.Unmarshal([]byte(js), &cfg)
	cfg.OnEvent = JSONEvents(os.Stderr, cfg.Node)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Main(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

func TestDemo(t *testing.T) {
	mode, _ := ParseMode(os.Getenv("MODE"))
	fault := os.Getenv("FAULT")
	intra := map[int]string{}
	httpA := map[int]string{}
	for id := 1; id <= 4; id++ {
		intra[id] = freeAddr(t, fmt.Sprintf("127.0.0.%d", 40+id))
		httpA[id] = freeAddr(t, fmt.Sprintf("127.0.0.%d", 40+id))
	}
	fn, _ := faultnet.NewNet(intra, faultnet.NetOptions{Seed: 1, ListenAddr: func(int, int) string { return "127.0.0.1:0" }})
	defer fn.Close()
	procs := map[int]*exec.Cmd{}
	start := func(id int) {
		cfg := Config{Node: id, Mode: mode, HTTPAddr: httpA[id], IntraAddr: intra[id], Peers: fn.PeersOf(id),
			Pages: 3000, PageSize: 8192, CachePages: 300, Heartbeat: 200 * time.Millisecond, StallLimit: 60 * time.Second}
		js, _ := json.Marshal(cfg)
		cmd := exec.Command(os.Args[0], "-test.run=TestHelperNode")
		cmd.Env = append(os.Environ(), "PRESS_NODE="+string(js))
		cmd.Stderr = os.Stderr
		cmd.Start()
		procs[id] = cmd
	}
	for id := 1; id <= 4; id++ {
		start(id)
	}
	defer func() {
		for _, p := range procs {
			p.Process.Signal(syscall.SIGCONT)
			p.Process.Kill()
			p.Wait()
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	z := workload.NewZipf(3000, 1.0)
	rng := rand.New(rand.NewSource(1))
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var ok, bad, sent atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 24*time.Second)
	defer cancel()
	go func() {
		tick := time.NewTicker(5 * time.Millisecond) // 200 req/s
		defer tick.Stop()
		i := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			i++
			p := z.Draw(rng)
			id := 1 + i%4
			wg.Add(1)
			sent.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get("http://" + httpA[id] + pageset.Path(p))
				if err != nil {
					bad.Add(1)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && pageset.Verify(pageset.Path(p), b) {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}()
		}
	}()
	var line []string
	var linkRevert func()
	for w := 0; w < 24; w++ {
		switch {
		case w == 6 && fault == "hang":
			procs[2].Process.Signal(syscall.SIGSTOP)
			line = append(line, "[STOP]")
		case w == 12 && fault == "hang":
			procs[2].Process.Signal(syscall.SIGCONT)
			line = append(line, "[CONT]")
		case w == 6 && fault == "shorthang":
			procs[2].Process.Signal(syscall.SIGSTOP)
			time.Sleep(450 * time.Millisecond) // under 3 beats of 200ms
			procs[2].Process.Signal(syscall.SIGCONT)
			line = append(line, "[STOP450ms]")
		case w == 6 && fault == "crash":
			procs[2].Process.Kill()
			procs[2].Wait()
			line = append(line, "[KILL]")
		case w == 12 && fault == "crash":
			start(2)
			line = append(line, "[START]")
		}
		if w == 6 && fault == "link" {
			linkRevert, _ = fn.SetNode(2, faultnet.State{Down: faultnet.Hold})
			line = append(line, "[DOWN]")
		}
		if w == 12 && fault == "link" {
			linkRevert()
			line = append(line, "[UP]")
		}
		o := ok.Load()
		time.Sleep(time.Second)
		line = append(line, fmt.Sprint(ok.Load()-o))
	}
	cancel()
	wg.Wait()
	t.Logf("%s %s ok/s: %s (sent %d ok %d bad %d)", mode, fault, strings.Join(line, " "), sent.Load(), ok.Load(), bad.Load())
}
