package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/record"
)

// fakeEtcd is an in-memory store behind etcd's JSON gateway paths. lag > 0
// makes every read return the value from lag writes ago (a stale
// replica); phantom makes reads return another key's value.
type fakeEtcd struct {
	mu      sync.Mutex
	hist    map[string][][]byte
	lag     int
	phantom bool
}

func (f *fakeEtcd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Key, Value []byte }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	header := `"header":{"cluster_id":"1","member_id":"2","revision":"3","raft_term":"2"}`
	switch r.URL.Path {
	case "/v3/kv/put":
		f.hist[string(req.Key)] = append(f.hist[string(req.Key)], req.Value)
		w.Write([]byte("{" + header + "}"))
	case "/v3/kv/range":
		vs := f.hist[string(req.Key)]
		i := len(vs) - 1 - f.lag
		if i < 0 {
			w.Write([]byte("{" + header + "}"))
			return
		}
		v := vs[i]
		if f.phantom {
			v = bytes.Replace(v, []byte("/k"), []byte("/x"), 1)
		}
		kv, _ := json.Marshal(map[string][]byte{"key": req.Key, "value": v})
		w.Write([]byte("{" + header + `,"kvs":[` + string(kv) + `],"count":"1"}`))
	default:
		http.NotFound(w, r)
	}
}

// runKV makes n attempts of one kv user against f and returns the outcome
// counts and what the checker found in the history.
func runKV(t *testing.T, f *fakeEtcd, n int, keepalive bool) ([record.NumOutcomes]int, kvcheck.Counts) {
	t.Helper()
	srv := httptest.NewServer(f)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var buf bytes.Buffer
	start := time.Now()
	hist := kvcheck.NewWriter(&buf, start)
	d := newKVDriver(DriverConfig{ConnectTimeout: 2 * time.Second, ResponseTimeout: 6 * time.Second, Keepalive: keepalive,
		Users: 1, Seed: 7, KV: KVConfig{Keys: 2}, KVHistory: hist})
	defer d.Close()
	var out [record.NumOutcomes]int
	for range n {
		r := d.Do(context.Background(), Attempt{Scheduled: time.Now(), Addr: addr, Host: addr})
		out[r.Outcome]++
		if r.Target != TargetGet && r.Target != TargetPut {
			t.Fatalf("target %q", r.Target)
		}
	}
	if err := hist.Close(); err != nil {
		t.Fatal(err)
	}
	c, _ := kvcheck.New(kvcheck.Config{WindowS: 1})
	if err := kvcheck.ReadHistory(&buf, "history", c.Add); err != nil {
		t.Fatal(err)
	}
	return out, c.Close().Total
}

func TestKVDriverHealthyStore(t *testing.T) {
	for _, keep := range []bool{false, true} {
		out, got := runKV(t, &fakeEtcd{hist: map[string][][]byte{}}, 200, keep)
		if out[record.OK] != 200 {
			t.Errorf("keepalive %v: outcomes %v, want 200 ok", keep, out)
		}
		if got.Anomalies() != 0 || got.Reads == 0 || got.WritesAcked == 0 || got.Reads+got.WritesAcked != 200 {
			t.Errorf("keepalive %v: checker %+v, want every read ok", keep, got)
		}
	}
}

func TestKVDriverStaleStore(t *testing.T) {
	out, got := runKV(t, &fakeEtcd{hist: map[string][][]byte{}, lag: 1}, 200, true)
	if out[record.DataError] == 0 || int64(out[record.DataError]) != got.Anomalies() {
		t.Errorf("outcomes %v, checker %+v: want every stale read a data_error", out, got)
	}
	if got.Stale+got.Lost == 0 || got.Phantom != 0 {
		t.Errorf("checker %+v, want stale (or lost) reads and no phantom", got)
	}
}

func TestKVDriverPhantomStore(t *testing.T) {
	out, got := runKV(t, &fakeEtcd{hist: map[string][][]byte{}, phantom: true}, 100, true)
	if got.Phantom == 0 || int64(out[record.DataError]) != got.Phantom {
		t.Errorf("outcomes %v, checker %+v: want phantom reads, each a data_error", out, got)
	}
}

func TestKVDriverRefusedStore(t *testing.T) {
	srv := httptest.NewServer(&fakeEtcd{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	d := newKVDriver(DriverConfig{ConnectTimeout: time.Second, ResponseTimeout: time.Second, Users: 1})
	r := d.Do(context.Background(), Attempt{Scheduled: time.Now(), Addr: addr, Host: addr})
	if r.Outcome != record.ConnError {
		t.Errorf("closed port: %v, want conn_error", r.Outcome)
	}
}

func TestKVValueRoundTrip(t *testing.T) {
	key := []byte("fb/c0-u1/k2")
	v := kvValue(nil, key, 42, 64)
	if len(v) != 64 {
		t.Errorf("value of %d bytes, want 64", len(v))
	}
	if got, ok := parseKVValue(v, key); !ok || got != 42 {
		t.Errorf("parse: %d %v", got, ok)
	}
	for _, bad := range []string{"", "fb|", "fb|fb/c0-u1/k2|", "fb|fb/c0-u1/k3|42|..", "fb|fb/c0-u1/k2|0|", "fb|fb/c0-u1/k2|42|.x"} {
		if _, ok := parseKVValue([]byte(bad), key); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestKVConfigValidate(t *testing.T) {
	for _, k := range []KVConfig{{API: "redis"}, {Keys: -1}, {Reads: 2}, {ValueSize: -3}, {Prefix: "v3"}} {
		if err := k.withDefaults().validate(); err == nil {
			t.Errorf("%+v accepted", k)
		}
	}
	if err := (KVConfig{}).withDefaults().validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// FuzzKVAnswer feeds the etcd answer decoder and the value parser arbitrary
// bodies: neither may panic, and a value that parses names its key.
func FuzzKVAnswer(f *testing.F) {
	key := []byte("fb/c0-u1/k2")
	for _, s := range []string{`{"header":{"revision":"3"}}`, `{"header":{},"kvs":[{"key":"YQ==","value":"ZmJ8ZmIvYzAtdTEvazJ8M3wuLg=="}]}`,
		`{"kvs":[{},{}]}`, `[]`, `{"header":null}`, `{"header":{"revision":"1"},"kvs":[{"value":"!!"}]}`} {
		f.Add([]byte(s))
	}
	api := kvAPIs["etcd"]("/v3")
	f.Fuzz(func(t *testing.T, body []byte) {
		api.PutOK(body)
		value, found, err := api.Value(body)
		if err != nil || !found {
			return
		}
		if v, ok := parseKVValue(value, key); ok && !bytes.Contains(value, key) {
			t.Fatalf("value %q parsed as version %d of %s", value, v, key)
		}
	})
}

// The templated etcd bodies name the key the driver checks values against.
func TestKVEtcdBodiesNameTheUsersKey(t *testing.T) {
	d := newKVDriver(DriverConfig{Users: 1, Client: 3})
	u := <-d.free
	u.id = 5
	_, path, body := d.api.Put(nil, u.vars(2, []byte("v")))
	var req struct{ Key, Value []byte }
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if want := string(u.key(nil, 2)); string(req.Key) != want || string(req.Value) != "v" || path != "/v3/kv/put" {
		t.Errorf("put %s %s: key %q value %q, want key %q", path, body, req.Key, req.Value, want)
	}
}
