package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/record"
	"github.com/faultbench/faultbench/internal/reqtmpl"
)

// The kv driver is a read-your-writes workload for a key-value service
// (docs/real-services.md). Each client owns a pool of users (Config.Users,
// default DefaultUsers); each user owns KV.Keys keys and makes one request
// at a time: a get of one of its keys with probability KV.Reads, else a put
// of the key's next version. A version is never reused, even when its put
// got no answer. A value is "fb|KEY|VERSION|" padded to KV.ValueSize, so a
// read names the version it returned and betrays a value that is not the
// user's.
//
// The driver judges each answered get at once against the user's own
// kvcheck.KeyState (cheap, and the user is held by this attempt alone): a
// stale or phantom read is data_error, never ok. Every put that was sent
// and every answered get also go to the run's history (kvcheck.Writer,
// Config.KV.History), which analysis replays through kvcheck.Checker to
// tell stale from lost and count each kind per window and per fault.
//
// Outcomes: the connection phase as for the http driver; a put is ok when
// the service acknowledged it (2xx with the API's success body); a get is
// ok when its value passed the check; a 2xx whose body the API cannot read
// or whose value failed the check is data_error; another status is
// http_error. Targets are "put" and "get" (and "no-user" for an arrival
// that found every user busy, refused as the session drivers do).
type kvDriver struct {
	cfg  DriverConfig
	api  kvAPI
	free chan *kvUser
}

// Operation names in the target column of the kv driver.
const (
	TargetPut = "put"
	TargetGet = "get"
)

// KVConfig is the kv driver's part of Config.
type KVConfig struct {
	API       string  // how requests are built and answers read: "etcd" (the v3 JSON gateway; default)
	Prefix    string  // the API's path prefix: etcd 3.4 "/v3" (default), 3.3 "/v3beta"
	Keys      int     // keys per user (default DefaultKVKeys)
	Reads     float64 // share of gets (default 0.5)
	ValueSize int     // bytes per value (default DefaultKVValueSize; at least what the version needs)
	// History receives the history (kv-history.csv); nil keeps none. The
	// generator wraps it in a kvcheck.Writer whose origin is the run's
	// start, and flushes it when Run returns; the caller closes it.
	History io.Writer
}

// Defaults of the kv driver.
const (
	DefaultKVKeys      = 8
	DefaultKVValueSize = 64
	maxKVKeys          = 1 << 16
	maxKVValueSize     = 1 << 20
	maxKVBody          = maxKVValueSize*2 + 4096 // base64 and the JSON around it
)

func (k KVConfig) withDefaults() KVConfig {
	if k.API == "" {
		k.API = "etcd"
	}
	if k.Prefix == "" {
		k.Prefix = "/v3"
	}
	if k.Keys == 0 {
		k.Keys = DefaultKVKeys
	}
	if k.Reads == 0 {
		k.Reads = 0.5
	}
	if k.ValueSize == 0 {
		k.ValueSize = DefaultKVValueSize
	}
	return k
}

func (k KVConfig) validate() error {
	var errs []error
	if _, ok := kvAPIs[k.API]; !ok {
		errs = append(errs, fmt.Errorf("kv api %q is unknown (want etcd)", k.API))
	}
	if k.Keys < 1 || k.Keys > maxKVKeys {
		errs = append(errs, fmt.Errorf("kv keys %d: want 1 to %d per user", k.Keys, maxKVKeys))
	}
	if !(k.Reads >= 0 && k.Reads <= 1) {
		errs = append(errs, fmt.Errorf("kv reads %v: want a share from 0 to 1", k.Reads))
	}
	if k.ValueSize < 1 || k.ValueSize > maxKVValueSize {
		errs = append(errs, fmt.Errorf("kv value_size %d: want 1 to %d bytes", k.ValueSize, maxKVValueSize))
	}
	if len(k.Prefix) == 0 || k.Prefix[0] != '/' {
		errs = append(errs, fmt.Errorf("kv prefix %q: want a URL path starting with /", k.Prefix))
	}
	return errors.Join(errs...)
}

// kvAPI builds a key-value service's requests and reads its answers. One
// per driver, used from many goroutines at once: it holds no state.
type kvAPI interface {
	// Put and Get append the request's body to dst and return it with
	// the method and path. v names the user (Client, User), the key
	// (SetKey) and, for Put, the value.
	Put(dst []byte, v *reqtmpl.Vars) (method, path string, body []byte)
	Get(dst []byte, v *reqtmpl.Vars) (method, path string, body []byte)
	// PutOK reports whether a 2xx body acknowledges a write.
	PutOK(body []byte) bool
	// Value reads a 2xx get answer: the value, or found false when the
	// key does not exist; err when the body is not the API's answer.
	Value(body []byte) (value []byte, found bool, err error)
}

// kvAPIs maps KVConfig.API to a constructor taking the path prefix.
var kvAPIs = map[string]func(prefix string) kvAPI{}

func init() {
	drivers["kv"] = func(c DriverConfig) Driver { return newKVDriver(c) }
}

// kvUser is one emulated user: its keys' states and next versions.
type kvUser struct {
	client, id uint32
	rng        *rand.Rand
	keys       []kvcheck.KeyState
	next       []uint64     // last version sent, per key
	conn       *sessionConn // kept connection (keep-alive), to connAddr
	connAddr   string
	buf, body  []byte
	tv         reqtmpl.Vars
}

func newKVDriver(cfg DriverConfig) *kvDriver {
	kc := cfg.KV.withDefaults()
	n := cfg.Users
	if n <= 0 {
		n = DefaultUsers
	}
	d := &kvDriver{cfg: cfg, api: kvAPIs[kc.API](kc.Prefix), free: make(chan *kvUser, n)}
	d.cfg.KV = kc
	for i := range n {
		d.free <- &kvUser{
			client: uint32(cfg.Client), id: uint32(i),
			rng:  rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Client)<<32|uint64(i))),
			keys: make([]kvcheck.KeyState, kc.Keys), next: make([]uint64, kc.Keys),
		}
	}
	return d
}

// Close closes the users' idle connections. The generator calls it once,
// after the client's last attempt returned.
func (d *kvDriver) Close() error {
	for {
		select {
		case u := <-d.free:
			if u.conn != nil {
				u.conn.Close()
				u.conn = nil
			}
		default:
			return nil
		}
	}
}

// key appends the name of the user's key k: "fb/c<client>-u<user>/k<k>".
func (u *kvUser) key(dst []byte, k int) []byte {
	dst = append(dst, "fb/c"...)
	dst = strconv.AppendUint(dst, uint64(u.client), 10)
	dst = append(dst, "-u"...)
	dst = strconv.AppendUint(dst, uint64(u.id), 10)
	dst = append(dst, "/k"...)
	return strconv.AppendInt(dst, int64(k), 10)
}

// vars are the template variables of a request of the user on key k.
func (u *kvUser) vars(k int, value []byte) *reqtmpl.Vars {
	u.tv.Next()
	u.tv.Client, u.tv.User, u.tv.Value = int(u.client), int(u.id), value
	u.tv.SetKey(int64(k))
	return &u.tv
}

// kvValue appends the value of version v of key: "fb|KEY|V|" padded with
// '.' to size bytes (longer when the prefix needs it).
func kvValue(dst, key []byte, v uint64, size int) []byte {
	start := len(dst)
	dst = append(dst, "fb|"...)
	dst = append(dst, key...)
	dst = append(dst, '|')
	dst = strconv.AppendUint(dst, v, 10)
	dst = append(dst, '|')
	for len(dst)-start < size {
		dst = append(dst, '.')
	}
	return dst
}

// parseKVValue returns the version a value names, and false when it is no
// value written for key.
func parseKVValue(value, key []byte) (uint64, bool) {
	rest, ok := cutPrefix(value, "fb|")
	if !ok || len(rest) < len(key)+1 || string(rest[:len(key)]) != string(key) || rest[len(key)] != '|' {
		return 0, false
	}
	rest = rest[len(key)+1:]
	i := 0
	for i < len(rest) && rest[i] != '|' {
		i++
	}
	if i == len(rest) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	if err != nil || v == 0 {
		return 0, false
	}
	for _, c := range rest[i+1:] {
		if c != '.' {
			return 0, false
		}
	}
	return v, true
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return b, false
	}
	return b[len(p):], true
}

// Do implements Driver.
func (d *kvDriver) Do(ctx context.Context, a Attempt) Result {
	var u *kvUser
	select {
	case u = <-d.free:
	default:
		return Result{Outcome: record.ConnError, End: time.Now(), Target: TargetNoUser, Refused: record.RefusedNoUser}
	}
	defer func() { d.free <- u }()
	k := u.rng.IntN(len(u.keys))
	key := u.key(u.buf[:0], k)
	if u.rng.Float64() < d.cfg.KV.Reads {
		r := d.get(ctx, a, u, k, key)
		u.buf = key
		return r
	}
	r := d.put(ctx, a, u, k, key)
	u.buf = key
	return r
}

func (d *kvDriver) put(ctx context.Context, a Attempt, u *kvUser, k int, key []byte) Result {
	u.next[k]++
	v := u.next[k]
	value := kvValue(nil, key, v, d.cfg.KV.ValueSize)
	method, path, body := d.api.Put(u.body[:0], u.vars(k, value))
	u.body = body
	r, status, resp, sent := d.send(ctx, a, u, method, path, body)
	r.Target = TargetPut
	if !sent {
		return r // never reached the service: nothing was written
	}
	acked := resp != nil && status/100 == 2 && d.api.PutOK(resp)
	switch {
	case resp == nil:
	case acked:
		r.Outcome = record.OK
	case status/100 == 2:
		r.Outcome = record.DataError
	default:
		r.Outcome = record.HTTPError
	}
	u.keys[k].Put(v, acked)
	result := kvcheck.Acked
	if !acked {
		result = kvcheck.Unacked
	}
	d.history(a, r, u, k, kvcheck.Put, v, result)
	return r
}

func (d *kvDriver) get(ctx context.Context, a Attempt, u *kvUser, k int, key []byte) Result {
	method, path, body := d.api.Get(u.body[:0], u.vars(k, nil))
	u.body = body
	r, status, resp, _ := d.send(ctx, a, u, method, path, body)
	r.Target = TargetGet
	if resp == nil {
		return r
	}
	if status/100 != 2 {
		r.Outcome = record.HTTPError
		return r
	}
	var v uint64
	result := kvcheck.Missing
	value, found, err := d.api.Value(resp)
	switch {
	case err != nil:
		result = kvcheck.Garbage
	case found:
		var ok bool
		if v, ok = parseKVValue(value, key); ok {
			result = kvcheck.Found
		} else {
			v, result = 0, kvcheck.Garbage
		}
	}
	if verdict := u.keys[k].Get(v, result == kvcheck.Garbage); verdict == kvcheck.OK {
		r.Outcome = record.OK
	} else {
		// The record's check column names the kind ("get: stale",
		// "get: phantom"); analysis tells lost from stale later.
		r.Outcome, r.Check = record.DataError, "get: "+verdict.String()
	}
	d.history(a, r, u, k, kvcheck.Get, v, result)
	return r
}

func (d *kvDriver) history(a Attempt, r Result, u *kvUser, k int, kind kvcheck.Kind, v uint64, result kvcheck.Result) {
	if d.cfg.KVHistory == nil {
		return
	}
	d.cfg.KVHistory.RecordAt(a.Scheduled, r.End, kvcheck.Op{Client: u.client, User: u.id, Key: uint32(k), Kind: kind, Version: v, Result: result})
}

// send makes one request on the user's connection (a new one without
// keep-alive, or when the kept one is gone). resp is the body of a complete
// response, nil when none arrived (r.Outcome says why); sent is false when
// no connection was made, so the service cannot have seen the request.
func (d *kvDriver) send(ctx context.Context, a Attempt, u *kvUser, method, path string, body []byte) (r Result, status int, resp []byte, sent bool) {
	connectBy := a.Scheduled.Add(d.cfg.ConnectTimeout)
	conn := u.conn
	u.conn = nil
	if conn != nil && u.connAddr != a.Addr {
		// Kept for another node: the round robin moved on.
		conn.Close()
		conn = nil
	}
	reused := conn != nil
	for {
		if conn == nil {
			if !time.Now().Before(connectBy) {
				return Result{Outcome: record.ConnAbort, End: connectBy}, 0, nil, false
			}
			c, err := dialTCP(ctx, a.Addr, connectBy)
			if err != nil {
				if isTimeout(err) {
					return Result{Outcome: record.ConnAbort, End: connectBy}, 0, nil, false
				}
				return Result{Outcome: record.ConnError, End: time.Now()}, 0, nil, false
			}
			conn = newSessionConn(c)
		}
		r, status, resp, keep, retry := d.exchange(ctx, conn, a, method, path, body, time.Now().Add(d.cfg.ResponseTimeout))
		if retry && reused {
			// A kept connection the server had closed: nothing was read,
			// so the request was not served; try once on a new one.
			conn.Close()
			conn, reused = nil, false
			continue
		}
		if keep {
			u.conn, u.connAddr = conn, a.Addr
		} else {
			conn.Close()
		}
		return r, status, resp, true
	}
}

func (d *kvDriver) exchange(ctx context.Context, conn *sessionConn, a Attempt, method, path string, body []byte, deadline time.Time) (r Result, status int, resp []byte, keep, retry bool) {
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(aLongTimeAgo) })
	defer stop()
	timedOut := Result{Outcome: record.Timeout, End: deadline}
	if _, err := conn.Write(d.request(a, method, path, body)); err != nil {
		if isTimeout(err) {
			return timedOut, 0, nil, false, false
		}
		return Result{Outcome: record.ConnError, End: time.Now()}, 0, nil, false, true
	}
	conn.bytes = 0
	hr, err := http.ReadResponse(conn.br, nil)
	if err != nil {
		switch {
		case isTimeout(err):
			return timedOut, 0, nil, false, false
		case conn.bytes == 0:
			return Result{Outcome: record.ConnError, End: time.Now()}, 0, nil, false, true
		default:
			return Result{Outcome: record.DataError, End: time.Now()}, 0, nil, false, false
		}
	}
	resp, err = io.ReadAll(io.LimitReader(hr.Body, maxKVBody+1))
	r = Result{Status: hr.StatusCode, Bytes: int64(len(resp)), End: time.Now()}
	switch {
	case err != nil && isTimeout(err):
		return Result{Outcome: record.Timeout, End: deadline, Status: hr.StatusCode}, hr.StatusCode, nil, false, false
	case err != nil || len(resp) > maxKVBody:
		r.Outcome = record.DataError
		return r, hr.StatusCode, nil, false, false
	}
	return r, hr.StatusCode, resp, d.cfg.Keepalive && !hr.Close, false
}

func (d *kvDriver) request(a Attempt, method, path string, body []byte) []byte {
	b := make([]byte, 0, 160+len(path)+len(a.Host)+len(body))
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, a.Host...)
	b = append(b, "\r\nUser-Agent: faultbench\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n"...)
	if !d.cfg.Keepalive {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}
