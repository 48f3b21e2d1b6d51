package press

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCommFaultLayer(t *testing.T) {
	f := newCommFaults(3)
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	m := Message{Type: MsgCached, From: 1, File: 9}
	frame, _ := AppendFrame(nil, &m)

	if _, err := f.add(FaultSpec{Type: "bitrot", Duration: "1s"}); err == nil {
		t.Fatal("unknown fault accepted")
	}
	if _, err := f.add(FaultSpec{Type: Slow, Duration: "0s"}); err == nil {
		t.Fatal("fault without duration accepted")
	}
	if _, err := f.add(FaultSpec{Type: MemAllocFail, Duration: "2s"}); err != nil {
		t.Fatal(err)
	}
	if !f.allocBlocked() {
		t.Fatal("mem-alloc-fail not in force")
	}
	now = now.Add(3 * time.Second)
	if f.allocBlocked() {
		t.Fatal("mem-alloc-fail outlived its duration")
	}

	null, _ := f.add(FaultSpec{Type: BadParamNull, Duration: "1m", Count: 1})
	if _, act := f.onSend(append([]byte(nil), frame...)); !act.drop {
		t.Fatal("bad-param-null did not drop the message")
	}
	if _, act := f.onSend(append([]byte(nil), frame...)); act.drop {
		t.Fatal("count 1 hit twice")
	}
	f.remove(null.ID)

	f.add(FaultSpec{Type: BadParamSize, Duration: "1m", N: 7})
	got, _ := f.onSend(append([]byte(nil), frame...))
	if d := len(got) - len(frame); d != 7 && d != -7 {
		t.Fatalf("bad-param-size changed the length by %d, want ±7", d)
	}
	f.clear()
	f.add(FaultSpec{Type: Slow, Duration: "1m", Delay: "30ms"})
	if got, act := f.onSend(append([]byte(nil), frame...)); act.delay != 30*time.Millisecond || !bytes.Equal(got, frame) {
		t.Fatalf("slow: delay %v, frame changed %v", act.delay, !bytes.Equal(got, frame))
	}
}

func TestRobustShedsLoadWith503(t *testing.T) {
	for _, mode := range []Mode{Robust, HA} {
		cfg := DefaultConfig()
		cfg.Mode, cfg.Node, cfg.HTTPAddr, cfg.IntraAddr = mode, 1, "127.0.0.1:1", "127.0.0.1:2"
		cfg.Peers, cfg.Pages, cfg.PageSize, cfg.MaxConns = map[int]string{2: "127.0.0.1:3"}, 10, 256, 4
		n, err := newNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n.core.Start()
		n.core.Ready()
		n.open.Store(4) // four requests already in progress
		rec := httptest.NewRecorder()
		n.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/p/3", nil))
		want := http.StatusOK // ha sheds by not accepting connections, never by answering
		if mode == Robust {
			want = http.StatusServiceUnavailable
		}
		if rec.Code != want {
			t.Errorf("%v: status %d, want %d", mode, rec.Code, want)
		}
		rec = httptest.NewRecorder()
		n.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/p/10", nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%v: page beyond the set: %d, want 404", mode, rec.Code)
		}
	}
}
