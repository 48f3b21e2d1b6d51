package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

func TestDecodeFault(t *testing.T) {
	req, k, m, err := DecodeFault(strings.NewReader(`{"type":"disk-hang-read","disk":3,"mode":"sticky"}`), 5)
	if err != nil || k != disk.HangRead || m != disk.Sticky || req.Disk != 3 {
		t.Fatalf("%+v %v %v %v", req, k, m, err)
	}
	for _, bad := range []string{
		``, `{}`, `{"type":"disk-hang-read"}`, `{"type":"disk-hang-read","disk":6}`, `{"type":"disk-hang-read","disk":1,"extra":1}`,
		`{"type":"disk-hang-read","disk":1}{}`, `{"type":"disk-hang-read","disk":"1"}`, `[1]`,
		`{"type":"disk-hang-read","disk":1,"mode":"sometimes"}`, `{"type":"app-crash","disk":1}`,
		`{"type":"disk-hang-read","disk":1,"pad":"` + strings.Repeat("x", MaxRequestBody) + `"}`,
	} {
		if _, _, _, err := DecodeFault(strings.NewReader(bad), 5); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%.60q: %v", bad, err)
		}
	}
}

func TestDecodeMaintenance(t *testing.T) {
	for _, good := range []string{`{"action":"replace-disk","disk":2}`, `{"action":"start-reconstruction"}`, `{"action":"add-spare"}`, `{"action":"force"}`, `{"action":"remove-wrong-disk","disk":5}`} {
		if _, err := DecodeMaintenance(strings.NewReader(good), 5); err != nil {
			t.Fatalf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{`{"action":"replace-disk"}`, `{"action":"replace-disk","disk":6}`, `{"action":"add-spare","disk":1}`, `{"action":"restart-all"}`, `{"action":"force","x":1}`} {
		if _, err := DecodeMaintenance(strings.NewReader(bad), 5); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}

// FuzzDecodeFault: no input panics, and an accepted request names a real
// disk and a known type and mode, and survives a round trip.
func FuzzDecodeFault(f *testing.F) {
	f.Add([]byte(`{"type":"disk-remove","disk":1,"mode":"sticky"}`))
	f.Add([]byte(`{"type":"disk-read-correctable","disk":4}`))
	f.Add([]byte(`{"disk":-1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, k, m, err := DecodeFault(bytes.NewReader(body), 5)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error not ErrBadRequest: %v", err)
			}
			return
		}
		if req.Disk < 1 || req.Disk > 5 || k.String() != req.Type || (m != disk.Transient && m != disk.Sticky) {
			t.Fatalf("accepted %+v", req)
		}
		again, _ := json.Marshal(req)
		req2, k2, m2, err := DecodeFault(bytes.NewReader(again), 5)
		if err != nil || req2 != req || k2 != k || m2 != m {
			t.Fatalf("round trip: %+v %v", req2, err)
		}
	})
}

func FuzzDecodeMaintenance(f *testing.F) {
	for _, a := range Actions {
		f.Add([]byte(`{"action":"` + a + `","disk":2}`))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeMaintenance(bytes.NewReader(body), 5)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error not ErrBadRequest: %v", err)
			}
			return
		}
		known := false
		for _, a := range Actions {
			known = known || a == req.Action
		}
		if !known || req.Disk < 0 || req.Disk > 5 {
			t.Fatalf("accepted %+v", req)
		}
	})
}
