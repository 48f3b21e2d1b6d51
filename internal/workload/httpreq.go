package workload

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/reqtmpl"
)

// DefaultMaxBody bounds the response body the checks see (workload.max_body).
const DefaultMaxBody = 1 << 20

// reqState is one templated attempt's scratch: its variables, its random
// source and its buffers, pooled so that a steady run does not allocate
// them per request.
type reqState struct {
	vars    reqtmpl.Vars
	src     pcgSource
	req     []byte
	body    []byte
	scratch []byte
	resp    bytes.Buffer
	r       *compiledRequest
	target  string
}

var reqStatePool = sync.Pool{New: func() any {
	s := &reqState{}
	s.vars.Rand = rand.New(&s.src)
	return s
}}

// pcgSource adapts math/rand/v2's PCG to the math/rand Source64 that
// reqtmpl.Vars takes, so each attempt can be reseeded cheaply.
type pcgSource struct{ randv2.PCG }

func (s *pcgSource) Int63() int64 { return int64(s.PCG.Uint64() >> 1) }
func (s *pcgSource) Seed(int64)   {}

// prepare renders the request of attempt number seq of this client. The
// random values of an attempt depend only on (seed, client, seq), so a
// run's requests are reproducible whatever the goroutine order.
func (d *HTTPDriver) prepare(a Attempt, seq uint64) *reqState {
	st := reqStatePool.Get().(*reqState)
	st.src.PCG.Seed(uint64(d.cfg.Seed), uint64(d.cfg.Client)<<40^seq)
	st.vars.User, st.vars.Client, st.vars.Seq = d.cfg.Client, d.cfg.Client, seq
	st.vars.Next()
	st.vars.Seq = seq
	st.r = d.cfg.Requests.pick(st.vars.Rand, seq)
	st.req, st.body = st.r.appendRequest(st.req[:0], st.body, &st.vars, a.Host, d.cfg.Keepalive)
	// The record's target is the rendered path.
	line := st.req[len(st.r.method)+1:]
	if i := bytes.IndexByte(line, ' '); i >= 0 {
		line = line[:i]
	}
	st.target = string(line)
	return st
}

func (st *reqState) release() {
	st.r, st.vars.Value = nil, nil
	st.resp.Reset()
	if cap(st.req) > 1<<20 || cap(st.body) > 1<<20 {
		return // an outsized request: let it go rather than pin it
	}
	reqStatePool.Put(st)
}

// readChecked reads a body for the checks: up to max bytes into st.resp,
// the rest counted and discarded. It returns the bytes read in all.
func (st *reqState) readChecked(body io.Reader, max int64) (n int64, truncated bool, err error) {
	n, err = st.resp.ReadFrom(io.LimitReader(body, max))
	if err != nil {
		return n, false, err
	}
	rest, err := io.Copy(io.Discard, body)
	return n + rest, rest > 0, err
}

// tlsConfig returns the client TLS configuration for host (host:port):
// the scenario's, with the target's host as server name when none is set.
func (d *HTTPDriver) tlsConfig(hostport string) *tls.Config {
	cfg := d.cfg.TLS
	if cfg.ServerName != "" || cfg.InsecureSkipVerify {
		return cfg
	}
	if c, ok := d.tlsByHost.Load(hostport); ok {
		return c.(*tls.Config)
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	c := cfg.Clone()
	c.ServerName = host
	d.tlsByHost.Store(hostport, c)
	return c
}

// handshake runs the TLS handshake on a fresh connection, bounded by the
// connect deadline: its time is part of the attempt's latency. A
// handshake that fails is a conn_error, one that runs out of time a
// conn_abort (the user was never connected).
func (d *HTTPDriver) handshake(ctx context.Context, c net.Conn, a Attempt, connectBy time.Time) (net.Conn, *Result) {
	tc := tls.Client(c, d.tlsConfig(a.Host))
	tc.SetDeadline(connectBy)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		if isTimeout(err) {
			return nil, &Result{Outcome: record.ConnAbort, End: connectBy}
		}
		return nil, &Result{Outcome: record.ConnError, End: time.Now()}
	}
	return tc, nil
}

// checkResponse reads the body of a templated request's response (up to
// MaxBody kept for the checks) and classifies it by the request's checks.
func (d *HTTPDriver) checkResponse(st *reqState, a Attempt, resp *http.Response, deadline time.Time) (r Result, keep, retry bool) {
	r.Status = resp.StatusCode
	max := d.cfg.MaxBody
	if max <= 0 {
		max = DefaultMaxBody
	}
	var truncated bool
	var err error
	if needsBody(st.r.expect) {
		r.Bytes, truncated, err = st.readChecked(resp.Body, max)
	} else {
		r.Bytes, err = io.Copy(io.Discard, resp.Body)
	}
	r.End = time.Now()
	keep = d.cfg.Keepalive && err == nil && !resp.Close
	statusOK := st.r.expect[0].run(&response{status: resp.StatusCode})
	switch {
	case !statusOK:
		// The status is the service's answer, whatever became of the body.
		r.Outcome, r.Check = record.HTTPError, st.r.expect[0].label
		return r, keep, false
	case err != nil && isTimeout(err):
		r.Outcome, r.End = record.Timeout, deadline
		return r, false, false
	case err != nil:
		r.Outcome = record.DataError // truncated or badly framed body
		return r, false, false
	}
	check := response{status: resp.StatusCode, header: resp.Header, body: st.resp.Bytes(), truncated: truncated,
		latency: r.End.Sub(a.Scheduled), vars: &st.vars, scratch: st.scratch}
	r.Outcome, r.Check = evaluate(st.r.expect, &check)
	st.scratch = check.scratch
	return r, keep, false
}
