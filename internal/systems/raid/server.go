package raid

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	ctl "github.com/faultbench/faultbench/internal/control"
	"github.com/faultbench/faultbench/internal/pageset"
	"github.com/faultbench/faultbench/internal/systems/raid/array"
	"github.com/faultbench/faultbench/internal/systems/raid/control"
	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// server is the node's HTTP front end over one array and its store.
type server struct {
	arr      *array.Array
	store    *Store
	events   *eventRing
	token    string
	gate     *admission // bounds the volume requests at work and waiting
	requests atomic.Int64
	conns    atomic.Int64 // open client connections (http.Server.ConnState)
	bufs     sync.Pool
}

// connState counts open connections; the HTTP server calls it from each
// connection's goroutine.
func (s *server) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Add(-1)
	}
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /p/{i}", s.getPage)
	mux.HandleFunc("PUT /p/{i}", s.putPage)
	mux.HandleFunc("GET /log", s.getLog)
	mux.HandleFunc("POST /control/fault", s.auth(s.postFault))
	mux.HandleFunc("DELETE /control/fault/{id}", s.auth(s.deleteFault))
	mux.HandleFunc("POST /control/maintenance", s.auth(s.postMaintenance))
	mux.HandleFunc("GET /control/status", s.auth(s.getStatus))
	mux.HandleFunc("GET /control/events", s.auth(s.getEvents))
	return mux
}

// health is 200 while the volume serves I/O and 503 once it refuses it.
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	if st := s.arr.Status(); st.State == "failed" {
		http.Error(w, "volume failed: "+array.ErrFailed.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func pageNumber(r *http.Request) (int, bool) {
	return pageset.ParsePath(r.URL.Path)
}

// storageStatus maps a store or volume error to an HTTP status. Nothing
// that failed a check is ever sent as 200.
func storageStatus(err error) int {
	switch {
	case errors.Is(err, ErrNoPage):
		return http.StatusNotFound
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrCorrupt):
		return http.StatusInternalServerError
	}
	return http.StatusServiceUnavailable // array.ErrFailed, array.ErrUnrecoverable, ...
}

// admit gets r a turn at the volume (see admission). When it returns
// false the request is over: refused with 503 and Retry-After (and
// written to the access log when logged), or abandoned by its client,
// which needs no answer. Otherwise the caller must call release.
func (s *server) admit(w http.ResponseWriter, r *http.Request, logged bool) (release func(), ok bool) {
	release, err := s.gate.enter(r.Context())
	if err != nil {
		if errors.Is(err, ErrBusy) {
			if logged {
				s.logRequest(r, http.StatusServiceUnavailable, 0)
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
		return nil, false
	}
	if r.Context().Err() != nil { // the client left as the slot came free
		release()
		return nil, false
	}
	return release, true
}

func (s *server) getPage(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	i, ok := pageNumber(r)
	if !ok {
		s.logRequest(r, http.StatusNotFound, 0)
		http.NotFound(w, r)
		return
	}
	release, ok := s.admit(w, r, true)
	if !ok {
		return
	}
	defer release()
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	body, err := s.store.Get((*bp)[:0], i)
	*bp = body[:0]
	if err != nil {
		code := storageStatus(err)
		s.logRequest(r, code, 0)
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
	s.logRequest(r, http.StatusOK, len(body))
}

func (s *server) putPage(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	i, ok := pageNumber(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	release, ok := s.admit(w, r, true)
	if !ok {
		return
	}
	defer release()
	body, err := io.ReadAll(io.LimitReader(r.Body, s.store.slot))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.store.Put(i, body); err != nil {
		code := storageStatus(err)
		s.logRequest(r, code, 0)
		http.Error(w, err.Error(), code)
		return
	}
	s.logRequest(r, http.StatusNoContent, 0)
	w.WriteHeader(http.StatusNoContent)
}

// getLog returns the tail of the access log as stored on the volume
// (?bytes=N, default 64 KiB).
func (s *server) getLog(w http.ResponseWriter, r *http.Request) {
	n := int64(64 << 10)
	if v := r.URL.Query().Get("bytes"); v != "" {
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n <= 0 || n > s.store.logSize {
			http.Error(w, fmt.Sprintf("bytes: want 1 to %d", s.store.logSize), http.StatusBadRequest)
			return
		}
	}
	release, ok := s.admit(w, r, false)
	if !ok {
		return
	}
	defer release()
	b, err := s.store.ReadLog(n)
	if err != nil {
		http.Error(w, err.Error(), storageStatus(err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(b)
}

// logRequest appends a Common Log Format line to the access log.
func (s *server) logRequest(r *http.Request, code, n int) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = "-"
	}
	line := fmt.Sprintf("%s - - [%s] %q %d %d\n", host, time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"),
		r.Method+" "+r.URL.RequestURI()+" "+r.Proto, code, n)
	s.store.AppendLog([]byte(line))
}

// auth wraps a control handler with the bearer-token check.
func (s *server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.token == "" {
			writeError(w, http.StatusForbidden, "control API disabled: start the node with --option control_token=TOKEN")
			return
		}
		if !ctl.Authorized(r, s.token) {
			writeError(w, http.StatusUnauthorized, "missing or wrong control token (Authorization: Bearer TOKEN)")
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, control.ErrorBody{Error: msg})
}

// arrayError answers an error of an array call.
func arrayError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, array.ErrNoDisk), errors.Is(err, control.ErrBadRequest):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, array.ErrState):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

func (s *server) postFault(w http.ResponseWriter, r *http.Request) {
	req, kind, mode, err := control.DecodeFault(r.Body, s.arr.Disks())
	if err != nil {
		arrayError(w, err)
		return
	}
	id, err := s.arr.Inject(req.Disk, kind, mode)
	if err != nil {
		arrayError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, control.FaultResponse{ID: id})
}

func (s *server) deleteFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fault id %q: want a positive integer", r.PathValue("id")))
		return
	}
	if !s.arr.Revert(id) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no fault %d (already reverted, or never injected)", id))
		return
	}
	writeJSON(w, http.StatusOK, control.FaultResponse{ID: id})
}

func (s *server) postMaintenance(w http.ResponseWriter, r *http.Request) {
	req, err := control.DecodeMaintenance(r.Body, s.arr.Disks())
	if err != nil {
		arrayError(w, err)
		return
	}
	resp := control.MaintenanceResponse{Action: req.Action}
	switch req.Action {
	case control.ReplaceDisk:
		err = s.arr.ReplaceDisk(req.Disk)
	case control.StartReconstruction:
		err = s.arr.StartReconstruction(req.Disk)
	case control.RemoveWrongDisk:
		resp.ID, err = s.arr.Inject(req.Disk, disk.Remove, disk.Sticky)
	case control.AddSpare:
		resp.Disk, err = s.arr.AddSpare()
	case control.Force:
		err = s.arr.Force()
	}
	if err != nil {
		arrayError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *server) status() control.Status {
	return control.Status{Status: s.arr.Status(), Requests: s.requests.Load(),
		LogBytes: s.store.logBytes.Load(), LogErrors: s.store.logErrors.Load(),
		Conns: s.conns.Load(), InFlight: s.gate.inFlight(), Queued: s.gate.queued.Load(), Refused: s.gate.refused.Load()}
}

func (s *server) getStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.status())
}

func (s *server) getEvents(w http.ResponseWriter, r *http.Request) {
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		var err error
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("after %q: want a sequence number >= 0", v))
			return
		}
	}
	evs, next := s.events.after(after)
	writeJSON(w, http.StatusOK, control.EventsResponse{Events: evs, Next: next})
}
