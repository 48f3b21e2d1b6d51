package ssm

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/systems/ssm/app"
	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
)

func TestRegistered(t *testing.T) {
	kinds := node.Kinds()
	for _, k := range []string{BrickKind, AppKind} {
		if !slices.Contains(kinds, k) {
			t.Errorf("kind %s not registered (have %v)", k, kinds)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		kind string
		opts map[string]string
		want string
	}{
		"w<wq":       {AppKind, map[string]string{"bricks": "127.0.0.1:1", "w": "1", "wq": "2"}, "wq=2"},
		"r>w":        {AppKind, map[string]string{"bricks": "127.0.0.1:1", "r": "4"}, "r=4"},
		"no bricks":  {AppKind, nil, "needs option bricks"},
		"backend":    {AppKind, map[string]string{"backend": "redis"}, "backend"},
		"file dir":   {AppKind, map[string]string{"backend": "file"}, "file_dir"},
		"unknown":    {AppKind, map[string]string{"backend": "memory", "colour": "red"}, `unknown option "colour"`},
		"duration":   {BrickKind, map[string]string{"slow": "fast"}, "slow"},
		"beacon":     {BrickKind, map[string]string{"beacon_interval": "0s"}, "beacon_interval"},
		"brick bool": {BrickKind, map[string]string{"discard_expired": "maybe"}, "discard_expired"},
		"procs":      {BrickKind, map[string]string{"procs": "0"}, "procs 0"},
	} {
		cfg := node.Config{Node: 1, Options: tc.opts}
		var err error
		if tc.kind == AppKind {
			_, err = AppConfig(cfg)
		} else {
			_, err = BrickConfig(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want mention of %q", name, err, tc.want)
		}
	}
	// Every node gets the same options: each role takes the other's.
	if _, err := AppConfig(node.Config{Node: 1, Options: map[string]string{"backend": "memory", "procs": "2", "inbox": "10"}}); err != nil {
		t.Fatalf("ssm-app given brick options: %v", err)
	}
	if _, err := BrickConfig(node.Config{Node: 2, Options: map[string]string{"wq": "2", "state_size": "10", "apps": "1", "brick.3": "x:1"}}); err != nil {
		t.Fatalf("ssm-brick given app and cluster options: %v", err)
	}
	if bc, err := BrickConfig(node.Config{Node: 1, Options: map[string]string{"procs": "2"}}); err != nil || bc.Procs != 2 {
		t.Fatalf("procs: 2 gave Procs %d, %v", bc.Procs, err)
	}
	if bc, err := BrickConfig(node.Config{Node: 1}); err != nil || bc.Procs != 1 {
		t.Fatalf("no procs option gave Procs %d, %v; want the default, 1", bc.Procs, err)
	}
	s, err := AppConfig(node.Config{Node: 2, Options: map[string]string{"bricks": "a:1, b:2", "timeout": "100ms", "aimd": "false"}})
	if err != nil || !slices.Equal(s.Stub.Bricks, []string{"a:1", "b:2"}) || s.Stub.Timeout != 100*time.Millisecond || s.Stub.AIMD {
		t.Fatalf("%+v %v", s.Stub, err)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHealth(t *testing.T, addr string) {
	t.Helper()
	for range 200 {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never became healthy", addr)
}

// startNodes runs three brick nodes (control token "tok") and a front end
// over them through node.Run, as the testbed would (in-process), and waits
// until all answer /health. appOptions are added to the front end's
// options. stop ends them and checks that each stopped cleanly.
func startNodes(t *testing.T, appOptions map[string]string) (bricks []string, appAddr string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 4)
	for i := 1; i <= 3; i++ {
		addr := freeAddr(t)
		bricks = append(bricks, addr)
		go func() {
			done <- node.Run(ctx, BrickKind, node.Config{Listen: addr, Node: i, Options: map[string]string{"control_token": "tok"}})
		}()
	}
	appAddr = freeAddr(t)
	opts := map[string]string{"bricks": strings.Join(bricks, ","), "timeout": "500ms"}
	maps.Copy(opts, appOptions)
	go func() { done <- node.Run(ctx, AppKind, node.Config{Listen: appAddr, Node: 4, Options: opts}) }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		for range 4 {
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("node: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a node did not stop")
			}
		}
	}
	t.Cleanup(stop)
	for _, a := range append(bricks, appAddr) {
		waitHealth(t, a)
	}
	return bricks, appAddr, stop
}

// TestNodes runs three brick nodes and a front end node through node.Run,
// as the testbed would (in-process), and drives the session protocol.
func TestNodes(t *testing.T) {
	bricks, appAddr, stop := startNodes(t, nil)
	var cookie string
	for seq := uint64(1); seq <= 3; seq++ {
		var resp *http.Response
		var err error
		for range 100 { // until the stub has heard the bricks' beacons
			req, _ := http.NewRequest("POST", "http://"+appAddr+"/session/carol", nil)
			if cookie != "" {
				req.Header.Set(app.HeaderCookie, cookie)
			}
			resp, err = http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 503 {
				break
			}
			resp.Body.Close()
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %d: %d %s", seq, resp.StatusCode, body)
		}
		if err := app.VerifySession(body, "carol", seq); err != nil {
			t.Fatal(err)
		}
		cookie = resp.Header.Get(app.HeaderCookie)
	}
	ck, err := stub.ParseCookie(cookie)
	if err != nil {
		t.Fatal(err)
	}
	// Control endpoint: token required, then a bit flip in both bricks that
	// hold the session makes the read a 410, never a 200.
	req, _ := http.NewRequest("POST", "http://"+bricks[0]+"/control", strings.NewReader(`{"action":"slow","delay":"1ms"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("control without token: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	for _, id := range ck.Bricks {
		req, _ := http.NewRequest("POST", "http://"+bricks[id-1]+"/control", strings.NewReader(`{"action":"bitflip","target":"value"}`))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("bitflip on brick %d: %v %v", id, resp.StatusCode, err)
		}
		resp.Body.Close()
	}
	req, _ = http.NewRequest("GET", "http://"+appAddr+"/session/carol", nil)
	req.Header.Set(app.HeaderCookie, cookie)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 410 || resp.Header.Get(app.HeaderError) != "state-corrupt" {
		t.Fatalf("read after bit flips: %d %s", resp.StatusCode, resp.Header.Get(app.HeaderError))
	}
	stop()
}

func TestRoles(t *testing.T) {
	peers := []string{"a:1", "b:2", "c:3", "d:4"}
	apps, bricks, err := Roles(node.Config{Node: 1, Peers: peers})
	if err != nil || !slices.Equal(apps, []int{1}) || !slices.Equal(bricks, []int{2, 3, 4}) {
		t.Fatalf("default: %v %v %v", apps, bricks, err)
	}
	apps, bricks, err = Roles(node.Config{Node: 1, Peers: peers, Options: map[string]string{"apps": "4, 3"}})
	if err != nil || !slices.Equal(apps, []int{4, 3}) || !slices.Equal(bricks, []int{1, 2}) {
		t.Fatalf("apps=4,3: %v %v %v", apps, bricks, err)
	}
	for _, bad := range []string{"5", "x", "1,2,3,4", "0"} {
		if _, _, err := Roles(node.Config{Node: 1, Peers: peers, Options: map[string]string{"apps": bad}}); err == nil {
			t.Errorf("apps=%s accepted", bad)
		}
	}
}

// TestClusterKind runs a whole SSM cluster as the testbed would with one
// node kind and one option map for all nodes: nodes 1–3 bricks, node 4 the
// front end, which finds the bricks in --peers.
func TestClusterKind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peers []string
	for range 4 {
		peers = append(peers, freeAddr(t))
	}
	opts := map[string]string{"apps": "4", "control_token": "tok", "timeout": "500ms", "seed": "3"}
	done := make(chan error, 4)
	for i := 1; i <= 4; i++ {
		go func() {
			done <- node.Run(ctx, ClusterKind, node.Config{Listen: peers[i-1], Node: i, Peers: peers, Options: opts})
		}()
	}
	for _, a := range peers {
		waitHealth(t, a)
	}
	var cookie string
	for seq := uint64(1); seq <= 2; seq++ {
		var body []byte
		var status int
		for range 100 {
			req, _ := http.NewRequest("POST", "http://"+peers[3]+"/session/dave", nil)
			if cookie != "" {
				req.Header.Set(app.HeaderCookie, cookie)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
			if status != 503 {
				cookie = resp.Header.Get(app.HeaderCookie)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if status != 200 {
			t.Fatalf("POST %d: %d %s", seq, status, body)
		}
		if err := app.VerifySession(body, "dave", seq); err != nil {
			t.Fatal(err)
		}
	}
	ck, err := stub.ParseCookie(cookie)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ck.Bricks {
		if id < 1 || id > 3 {
			t.Fatalf("cookie names brick %d, not a brick node", id)
		}
	}
	cancel()
	for range 4 {
		if err := <-done; err != nil {
			t.Errorf("node: %v", err)
		}
	}
}
