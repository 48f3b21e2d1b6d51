package brick

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/control"
)

// ControlRequest is the body of POST /control.
//
//	{"action": "bitflip", "target": "value|key|checksum|expiry", "which": "latest|random", "count": 1}
//	{"action": "slow", "delay": "1ms", "duration": "30s"}  per-message delay; "0s" clears;
//	                                         duration (optional, ≤ 1h) reverts it by itself
//	{"action": "clear"}                      clears slow (bit flips are damage: they stay)
//	{"action": "crash"}                      the brick process exits at once (memory lost)
type ControlRequest struct {
	Action   string `json:"action"`
	Target   string `json:"target,omitempty"`
	Which    string `json:"which,omitempty"`
	Count    int    `json:"count,omitempty"`
	Delay    string `json:"delay,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// ControlReply is the answer to every control request; Error is set with a
// non-2xx status.
type ControlReply struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error,omitempty"`
	Slow    string   `json:"slow"`
	Flips   uint64   `json:"flips"`
	Flipped []string `json:"flipped,omitempty"` // hex keys of the damaged entries
}

func (b *Brick) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.Stats())
	})
	mux.HandleFunc("GET /control", func(w http.ResponseWriter, r *http.Request) {
		if !b.authorized(w, r) {
			return
		}
		writeJSON(w, http.StatusOK, b.controlState(true, ""))
	})
	mux.HandleFunc("POST /control", b.control)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (b *Brick) controlState(ok bool, errText string) ControlReply {
	return ControlReply{OK: ok, Error: errText, Slow: time.Duration(b.slow.Load()).String(), Flips: b.flips.Load()}
}

func (b *Brick) authorized(w http.ResponseWriter, r *http.Request) bool {
	if b.cfg.ControlToken == "" {
		writeJSON(w, http.StatusNotFound, b.controlState(false, "control endpoint disabled: start the brick with option control_token"))
		return false
	}
	if !control.Authorized(r, b.cfg.ControlToken) {
		writeJSON(w, http.StatusUnauthorized, b.controlState(false, "missing or wrong bearer token"))
		return false
	}
	return true
}

func (b *Brick) control(w http.ResponseWriter, r *http.Request) {
	if !b.authorized(w, r) {
		return
	}
	var req ControlRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, b.controlState(false, "bad control request: "+err.Error()))
		return
	}
	fail := func(format string, args ...any) {
		writeJSON(w, http.StatusBadRequest, b.controlState(false, fmt.Sprintf(format, args...)))
	}
	switch req.Action {
	case "slow":
		d, err := time.ParseDuration(req.Delay)
		if err != nil || d < 0 || d > 10*time.Second {
			fail("slow: delay %q must be a duration in [0, 10s]", req.Delay)
			return
		}
		var until time.Duration
		if req.Duration != "" {
			until, err = time.ParseDuration(req.Duration)
			if err != nil || until <= 0 || until > time.Hour {
				fail("slow: duration %q must be a duration in (0, 1h]", req.Duration)
				return
			}
		}
		b.slow.Store(int64(d))
		gen := b.slowGen.Add(1)
		if until > 0 {
			time.AfterFunc(until, func() {
				if b.slowGen.Load() == gen { // not superseded by a later slow or clear
					b.slow.Store(0)
					b.event("system.ssm.fault", fmt.Sprintf("brick %d: slow reverted after %v", b.cfg.ID, until))
				}
			})
		}
		b.event("system.ssm.fault", fmt.Sprintf("brick %d: slow %v per message", b.cfg.ID, d))
	case "clear":
		b.slowGen.Add(1)
		b.slow.Store(0)
		b.event("system.ssm.fault", fmt.Sprintf("brick %d: faults cleared", b.cfg.ID))
	case "bitflip":
		target := FlipTarget(req.Target)
		if target == "" {
			target = FlipValue
		}
		switch target {
		case FlipValue, FlipKey, FlipChecksum, FlipExpiry:
		default:
			fail("bitflip: target %q is unknown (want value, key, checksum or expiry)", req.Target)
			return
		}
		if req.Which != "" && req.Which != "latest" && req.Which != "random" {
			fail("bitflip: which %q is unknown (want latest or random)", req.Which)
			return
		}
		count := max(req.Count, 1)
		if count > 1_000_000 {
			fail("bitflip: count %d is too large", count)
			return
		}
		var flipped []string
		err := b.do(r.Context(), func() {
			if req.Which == "random" {
				for range count {
					k, ok := b.store.Flip(target, false, b.rng)
					if !ok {
						break
					}
					flipped = append(flipped, hex.EncodeToString(k[:]))
				}
				return
			}
			// latest: the count entries written last, one bit each.
			for _, k := range b.store.Latest(count) {
				b.store.FlipEntry(target, k, b.rng)
				flipped = append(flipped, hex.EncodeToString(k[:]))
			}
		})
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, b.controlState(false, err.Error()))
			return
		}
		b.flips.Add(uint64(len(flipped)))
		b.event("system.ssm.fault", fmt.Sprintf("brick %d: bitflip %s in %d entries", b.cfg.ID, target, len(flipped)))
		rep := b.controlState(true, "")
		rep.Flipped = flipped
		writeJSON(w, http.StatusOK, rep)
		return
	case "crash":
		// The whole answer must be on the wire before the process exits:
		// with a length, not a chunked body whose end the exit would cut
		// off (the injector read "unexpected EOF" and the run failed).
		body, _ := json.Marshal(b.controlState(true, ""))
		body = append(body, '\n')
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		b.event("system.ssm.fault", fmt.Sprintf("brick %d: crash on request", b.cfg.ID))
		b.crash("crash requested through the control endpoint")
		return
	default:
		fail("unknown action %q (want bitflip, slow, clear or crash)", req.Action)
		return
	}
	writeJSON(w, http.StatusOK, b.controlState(true, ""))
}
