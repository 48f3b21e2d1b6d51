package raid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/node"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

const testToken = "s3cret"

func testNodeConfig(t *testing.T, opts map[string]string) node.Config {
	o := map[string]string{"chunk": "4KiB", "control_token": testToken, "io_timeout": "20ms", "log_size": "64KiB"}
	for k, v := range opts {
		o[k] = v
	}
	return node.Config{Node: 1, Dir: t.TempDir(), Pages: 30, PageSize: 3000, Options: o}
}

// startNode opens a node and serves it over httptest; the array is ticked
// by the test, not by Run, so nothing happens behind its back.
func startNode(t *testing.T, opts map[string]string) (*Node, *httptest.Server, *control.Client) {
	t.Helper()
	n, err := Open(testNodeConfig(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(n.Handler())
	t.Cleanup(func() { ts.Close(); n.Close() })
	return n, ts, control.NewClient(strings.TrimPrefix(ts.URL, "http://"), testToken)
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// checkPages GETs every page: a 200 must be exactly the page set's body; it
// returns how many were served.
func checkPages(t *testing.T, n *Node, ts *httptest.Server) int {
	t.Helper()
	ok := 0
	for i := 0; i < n.Settings.Pages; i++ {
		code, body := get(t, ts.URL+pageset.Path(i))
		switch code {
		case http.StatusOK:
			if !pageset.Verify(pageset.Path(i), body) {
				t.Fatalf("page %d: 200 with wrong bytes", i)
			}
			ok++
		case http.StatusServiceUnavailable, http.StatusInternalServerError:
		default:
			t.Fatalf("page %d: status %d", i, code)
		}
	}
	return ok
}

func TestServesVerifiablePages(t *testing.T) {
	n, ts, _ := startNode(t, nil)
	if got := checkPages(t, n, ts); got != n.Settings.Pages {
		t.Fatalf("served %d of %d", got, n.Settings.Pages)
	}
	if code, _ := get(t, ts.URL+"/p/30"); code != http.StatusNotFound {
		t.Fatalf("page beyond the set: %d", code)
	}
	if code, _ := get(t, ts.URL+"/p/x"); code != http.StatusNotFound {
		t.Fatalf("bad page path: %d", code)
	}
	if code, body := get(t, ts.URL+"/health"); code != 200 || string(body) != "ok\n" {
		t.Fatalf("health %d %q", code, body)
	}
	// The access log reaches the volume and reads back from it.
	if err := n.Store.FlushLog(); err != nil {
		t.Fatal(err)
	}
	code, log := get(t, ts.URL+"/log")
	if code != 200 || !strings.Contains(string(log), `"GET /p/29 HTTP/1.1" 200 3000`) {
		t.Fatalf("log %d %q", code, log)
	}
}

func TestPutThenGet(t *testing.T) {
	n, ts, _ := startNode(t, nil)
	body := bytes.Repeat([]byte("written through the front end "), 50)
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/p/4", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("put: %v %v", err, resp.StatusCode)
	}
	// Lose a disk: the data still comes back, reconstructed.
	n.Array.Inject(1, disk.Remove, disk.Sticky)
	if code, got := get(t, ts.URL+"/p/4"); code != 200 || !bytes.Equal(got, body) {
		t.Fatalf("get after put: %d, equal=%v", code, bytes.Equal(got, body))
	}
	big := make([]byte, slotSize(3000))
	req, _ = http.NewRequest(http.MethodPut, ts.URL+"/p/4", bytes.NewReader(big))
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversize put: %d", resp.StatusCode)
	}
}

// TestFrontEndNeverServesWrongBytes injects every fault of Table 1, in both
// modes, under every policy, into a disk of a serving node, and checks that
// every 200 carries the right page, and that the volume stays available.
func TestFrontEndNeverServesWrongBytes(t *testing.T) {
	for _, pol := range []string{"paranoid", "tolerant", "threshold(3, 1m)"} {
		for _, k := range disk.Kinds() {
			for _, mode := range []string{"transient", "sticky"} {
				t.Run(pol+"/"+k.String()+"/"+mode, func(t *testing.T) {
					n, ts, c := startNode(t, map[string]string{"transient_policy": pol})
					ctx := context.Background()
					if _, err := c.InjectFault(ctx, control.FaultRequest{Type: k.String(), Disk: 2, Mode: mode}); err != nil {
						t.Fatal(err)
					}
					if got := checkPages(t, n, ts); got != n.Settings.Pages {
						t.Fatalf("a single fault cost %d pages", n.Settings.Pages-got)
					}
					for n.Array.Rebuilding() {
						n.Array.Step(1 << 20)
					}
					if got := checkPages(t, n, ts); got != n.Settings.Pages {
						t.Fatalf("after: served %d of %d", got, n.Settings.Pages)
					}
				})
			}
		}
	}
}

func TestDoubleFailureOverHTTP(t *testing.T) {
	n, ts, c := startNode(t, map[string]string{"spares": "0"})
	ctx := context.Background()
	if _, err := c.InjectFault(ctx, control.FaultRequest{Type: "disk-power-fail", Disk: 1, Mode: "sticky"}); err != nil {
		t.Fatal(err)
	}
	checkPages(t, n, ts) // disk 1 loses power during the first command
	st, err := c.Status(ctx)
	if err != nil || st.State != "degraded" || st.Redundancy != 0 {
		t.Fatalf("status %+v %v", st.Status, err)
	}
	resp, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.RemoveWrongDisk, Disk: 3})
	if err != nil || resp.ID == 0 {
		t.Fatalf("remove-wrong-disk: %+v %v", resp, err)
	}
	if got := checkPages(t, n, ts); got != 0 {
		t.Fatalf("failed volume served %d pages", got)
	}
	if code, _ := get(t, ts.URL+"/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("health of a failed volume: %d", code)
	}
	if _, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.Force}); !errors.Is(err, control.ErrConflict) {
		t.Fatalf("force with the disk still out: %v", err)
	}
	if err := c.RevertFault(ctx, resp.ID); err != nil { // put the wrong disk back
		t.Fatal(err)
	}
	if got := checkPages(t, n, ts); got != 0 {
		t.Fatalf("reinsertion alone revived the volume (%d pages)", got)
	}
	if _, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.Force}); err != nil {
		t.Fatal(err)
	}
	if got := checkPages(t, n, ts); got != n.Settings.Pages {
		t.Fatalf("after force: %d of %d", got, n.Settings.Pages)
	}
	evs, next, err := c.Events(ctx, 0)
	if err != nil || next == 0 {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	for _, want := range []string{"disk.failed", "volume.degraded", "volume.failed", "volume.forced"} {
		if !strings.Contains(strings.Join(kinds, " "), want) {
			t.Fatalf("event %s missing from %v", want, kinds)
		}
	}
	later, _, _ := c.Events(ctx, next)
	if len(later) != 0 {
		t.Fatalf("events after next: %v", later)
	}
	// The same events are in the node's event file.
	data, err := os.ReadFile(filepath.Join(n.Dir, "raid-events.jsonl"))
	if err != nil || !strings.Contains(string(data), `"kind":"volume.failed"`) {
		t.Fatalf("event file: %v %s", err, data)
	}
}

func TestControlAuthAndBadInput(t *testing.T) {
	_, ts, c := startNode(t, nil)
	ctx := context.Background()
	bad := control.NewClient(strings.TrimPrefix(ts.URL, "http://"), "wrong")
	if _, err := bad.Status(ctx); !errors.Is(err, control.ErrUnauthorized) {
		t.Fatalf("wrong token: %v", err)
	}
	resp, _ := http.Get(ts.URL + "/control/status")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	for _, req := range []control.FaultRequest{
		{Type: "disk-read-uncorrectable", Disk: 9}, {Type: "disk-read-uncorrectable", Disk: 0},
		{Type: "disk-melt", Disk: 1}, {Type: "disk-remove", Disk: 1, Mode: "forever"},
	} {
		_, err := c.InjectFault(ctx, req)
		if !errors.Is(err, control.ErrBadRequest) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	_, err := c.InjectFault(ctx, control.FaultRequest{Type: "disk-remove", Disk: 9})
	if !strings.Contains(err.Error(), "disk 9 does not exist") {
		t.Fatalf("error does not name the disk: %v", err)
	}
	if err := c.RevertFault(ctx, 77); !errors.Is(err, control.ErrNotFound) {
		t.Fatalf("unknown fault: %v", err)
	}
	if _, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: "reboot"}); !errors.Is(err, control.ErrBadRequest) {
		t.Fatalf("unknown action: %v", err)
	}
	if _, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.StartReconstruction}); !errors.Is(err, control.ErrConflict) {
		t.Fatalf("reconstruction of a healthy array: %v", err)
	}
	r, err := c.Maintenance(ctx, control.MaintenanceRequest{Action: control.AddSpare})
	if err != nil || r.Disk != 6 {
		t.Fatalf("add-spare: %+v %v", r, err)
	}
	// Disabled API.
	_, ts2, _ := startNode(t, map[string]string{"control_token": ""})
	resp, _ = http.Get(ts2.URL + "/control/status")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("disabled API: %d", resp.StatusCode)
	}
}

func TestBadOptions(t *testing.T) {
	for opt, want := range map[string]string{
		"disks=2":                   "RAID-5 needs 3",
		"chunk=1000":                "multiple of 4096",
		"transient_policy=linux":    "give policy_set=linux",
		"reconstruction=fast":       "reconstruction",
		"disk_size=8KiB":            "cannot hold",
		"colour=blue":               "unknown option",
		"io_timeout=soon":           "bad duration",
		"reconstruction_auto=maybe": "reconstruction_auto",
		"policy_set=hpux":           "want one of linux, solaris, windows2000",
		"double_failure=sometimes":  "double_failure",
	} {
		k, v, _ := strings.Cut(opt, "=")
		cfg := testNodeConfig(t, map[string]string{k: v})
		_, err := Open(cfg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", opt, err, want)
		}
		if entries, _ := os.ReadDir(cfg.Dir); len(entries) != 0 {
			t.Fatalf("%s: files created before validation: %v", opt, entries)
		}
	}
}

func TestServeRegistersAndStops(t *testing.T) {
	if !strings.Contains(fmt.Sprint(node.Kinds()), Kind) {
		t.Fatalf("kinds %v", node.Kinds())
	}
	cfg := testNodeConfig(t, nil)
	cfg.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := node.Run(ctx, Kind, cfg); err != nil {
		t.Fatalf("serve with a cancelled context: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "raid-events.jsonl")); err != nil {
		t.Fatal(err)
	}
}

// TestLiveNode is the end-to-end check of the wiring: a real Serve, ticked by
// its own goroutines, rebuilds onto the spare by itself and flushes its log.
func TestLiveNode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testNodeConfig(t, map[string]string{"reconstruction": "high"})
	cfg.Listen = addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	c := control.NewClient(addr, testToken)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.Status(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.InjectFault(ctx, control.FaultRequest{Type: "disk-remove", Disk: 4}); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == "optimal" && st.Disks[4].State == "member" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rebuild: %+v", st.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, body := get(t, "http://"+addr+"/p/7")
	if code != 200 || !pageset.Verify("/p/7", body) {
		t.Fatalf("page: %d", code)
	}
	for {
		if _, log := get(t, "http://"+addr+"/log"); strings.Contains(string(log), "GET /p/7") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("access log never reached the volume")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFrontEndRandomFaultSequences: seeded random faults (every kind, both
// modes, any disk), reverts, maintenance and rebuild steps through the
// control API, interleaved with PUTs and GETs: every 200 carries the page's
// current body (or, after a PUT that failed, its old or its new body).
func TestFrontEndRandomFaultSequences(t *testing.T) {
	for _, pol := range []string{"paranoid", "tolerant", "threshold(3, 1m)"} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/%d", pol, seed), func(t *testing.T) {
				n, ts, c := startNode(t, map[string]string{"transient_policy": pol})
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(seed, 11))
				allowed := make([][][]byte, n.Settings.Pages)
				for i := range allowed {
					allowed[i] = [][]byte{pageset.Body(i, n.Settings.PageSize)}
				}
				kinds := disk.Kinds()
				var ids []int
				served := 0
				for op := 0; op < 150; op++ {
					i := rng.IntN(n.Settings.Pages)
					switch x := rng.IntN(100); {
					case x < 4:
						mode := []string{"transient", "sticky"}[rng.IntN(2)]
						id, err := c.InjectFault(ctx, control.FaultRequest{Type: kinds[rng.IntN(len(kinds))].String(), Disk: 1 + rng.IntN(n.Array.Disks()), Mode: mode})
						if err != nil {
							t.Fatal(err)
						}
						ids = append(ids, id)
					case x < 10 && len(ids) > 0:
						j := rng.IntN(len(ids))
						c.RevertFault(ctx, ids[j])
						ids = append(ids[:j], ids[j+1:]...)
					case x < 13:
						action := []string{control.ReplaceDisk, control.Force, control.StartReconstruction}[rng.IntN(3)]
						req := control.MaintenanceRequest{Action: action}
						if action == control.ReplaceDisk {
							req.Disk = 1 + rng.IntN(n.Array.Disks())
						}
						c.Maintenance(ctx, req) // may be refused (409): that is fine
					case x < 25:
						n.Array.Poll()
						n.Array.Step(1 << 20)
					case x < 45:
						body := []byte(fmt.Sprintf("page %d version %d %s", i, op, strings.Repeat("x", rng.IntN(2000))))
						req, _ := http.NewRequest(http.MethodPut, ts.URL+pageset.Path(i), bytes.NewReader(body))
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							t.Fatal(err)
						}
						resp.Body.Close()
						if resp.StatusCode == http.StatusNoContent {
							allowed[i] = [][]byte{body}
						} else {
							allowed[i] = append(allowed[i], body)
						}
					default:
						code, got := get(t, ts.URL+pageset.Path(i))
						if code != http.StatusOK {
							continue
						}
						served++
						ok := false
						for _, a := range allowed[i] {
							ok = ok || bytes.Equal(got, a)
						}
						if !ok {
							t.Fatalf("op %d: page %d: 200 with bytes that were never written", op, i)
						}
					}
				}
				if served < 10 {
					t.Errorf("only %d GETs served: the sequence tested little", served)
				}
			})
		}
	}
}

// TestKeepServingReachesTheClients: with the solaris policy set, a live
// disk pulled during a rebuild leaves the volume serving, and the garbage
// of the half-rebuilt spare reaches the clients as 200s with wrong bytes —
// what the workload's verification records as data_error — instead of
// being stopped by the store's own checksum. The other sets answer 503.
func TestKeepServingReachesTheClients(t *testing.T) {
	for set, wantWrong := range map[string]bool{"solaris": true, "linux": false, "windows2000": false} {
		t.Run(set, func(t *testing.T) {
			n, ts, _ := startNode(t, map[string]string{"policy_set": set})
			if _, err := n.Array.Inject(2, disk.Remove, disk.Sticky); err != nil {
				t.Fatal(err)
			}
			if set == "windows2000" {
				if err := n.Array.StartReconstruction(0); err != nil {
					t.Fatal(err)
				}
			}
			n.Array.Step(int64(n.Settings.Array.ChunkSize) * 4)
			if _, err := n.Array.Inject(3, disk.Remove, disk.Sticky); err != nil {
				t.Fatal(err)
			}
			wrong, refused := 0, 0
			for i := 0; i < n.Settings.Pages; i++ {
				code, body := get(t, ts.URL+pageset.Path(i))
				switch {
				case code == http.StatusOK && !pageset.Verify(pageset.Path(i), body):
					wrong++
				case code == http.StatusServiceUnavailable:
					refused++
				case code != http.StatusOK:
					t.Fatalf("page %d: status %d", i, code)
				}
			}
			if (wrong > 0) != wantWrong || (!wantWrong && refused != n.Settings.Pages) {
				t.Fatalf("%d of %d pages wrong, %d refused", wrong, n.Settings.Pages, refused)
			}
		})
	}
}
