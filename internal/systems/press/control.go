package press

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/faultbench/faultbench/internal/control"
)

// The control endpoint (Config.ControlAddr) injects faults into the node's
// communication layer. Every request needs "Authorization: Bearer <token>";
// bodies and answers are JSON.
//
//	POST   /faults  FaultSpec → 201 {"id":1,"type":"slow","until":"..."}; 400 for a bad spec
//	GET    /faults  → 200 [active faults]
//	DELETE /faults  → 204, every comm fault reverted
//	DELETE /faults/{id} → 204, that fault reverted (also when it had already expired)
//	GET    /status  → 200 Status
//
// A fault reverts itself after its duration (at most MaxFaultDuration).

// Status is the node's self-report on GET /status.
type Status struct {
	Node       int           `json:"node"`
	Mode       string        `json:"mode"`
	Serving    bool          `json:"serving"`
	Members    []int         `json:"members"`
	CachePages int           `json:"cache_pages"`
	Open       int64         `json:"open_requests"`
	Stats      Stats         `json:"stats"`
	Faults     []activeFault `json:"faults"`
}

func (n *node) status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Status{
		Node: n.cfg.Node, Mode: n.cfg.Mode.String(), Serving: n.core.Serving(),
		Members: n.core.Members(), CachePages: n.core.CacheLen(), Open: n.open.Load(),
		Stats: n.core.Stats(), Faults: n.faults.list(),
	}
}

func (n *node) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		var spec FaultSpec
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			http.Error(w, "bad fault spec: "+err.Error(), http.StatusBadRequest)
			return
		}
		a, err := n.faults.add(spec)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.emit("system.comm_fault", fmt.Sprintf("%s injected until %s", a.Type, a.Until.UTC().Format("15:04:05.000")))
		n.applyPin()
		writeJSON(w, http.StatusCreated, a)
	})
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, n.faults.list())
	})
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		n.faults.clear()
		n.emit("system.comm_fault", "all comm faults cleared")
		n.applyPin()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.Error(w, "bad fault id", http.StatusBadRequest)
			return
		}
		if n.faults.remove(id) {
			n.emit("system.comm_fault", fmt.Sprintf("comm fault %d cleared", id))
		}
		n.applyPin()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, n.status())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !control.Authorized(r, n.cfg.ControlToken) {
			http.Error(w, "press control: missing or wrong token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
