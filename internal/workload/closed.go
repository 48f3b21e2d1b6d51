package workload

import (
	"context"
	"fmt"
	"io"
	mrand "math/rand"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/law"
)

// Closed-loop users (Config.Model "closed"): each of a client's Users sends
// one request, waits for its outcome, thinks, and sends the next — the
// clients of Dumitras and Narasimhan (2005), who pause 0 to 32 ms between
// requests, and of Brown and Patterson (2000), whose rebuild cost only
// shows when the offered load follows the service. The offered load is
// then the service's to set: a slow reply delays the next request, so
// closed-loop latency measures a different thing than the open loop's
// (no arrival ever waits behind a slow one), and both are recorded alike.

// ModelClosed is Config.Model for closed-loop users.
const ModelClosed = "closed"

// ParseThink parses a think-time law: "0" (back to back), or a law of
// package law such as fixed(2ms) or exponential(8ms).
func ParseThink(s string) (law.Law, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" || s == "0s" {
		return law.Law{Name: "fixed"}, nil
	}
	l, err := law.Parse(s)
	if err != nil {
		return law.Law{}, fmt.Errorf("think: %w (or 0 for back-to-back requests)", err)
	}
	if l.Is("gaussian") {
		return law.Law{}, fmt.Errorf("think %q: want 0, fixed(D) or exponential(MEAN)", s)
	}
	return l, nil
}

// userSeed derives user u of client c's stream from the run seed, so that
// users are independent and adding one does not shift the others.
func userSeed(seed int64, c, u int) (uint64, uint64) {
	return uint64(clientSeed(seed, c)), uint64(u) + 1
}

// closedClient runs client c's users until the run's length, each in its
// own goroutine, and waits for them; an attempt still out at the end is
// bounded by its deadlines, then by drainGrace.
func (g *Generator) closedClient(schedCtx, attemptCtx context.Context, c int, start time.Time, length time.Duration) {
	driver := g.newDriver(c)
	if closer, ok := driver.(io.Closer); ok {
		defer closer.Close()
	}
	think, _ := ParseThink(g.cfg.Think) // Validate parsed it
	users := max(g.cfg.Users, 1)
	var wg sync.WaitGroup
	for u := range users {
		wg.Go(func() { g.user(schedCtx, attemptCtx, driver, think, c, u, start, 0, length, nil) })
	}
	g.drain(&wg, start, length)
}

// user is one closed-loop user: its first request after one think time
// (so users do not all start at once), each next one when the previous
// outcome arrived plus a fresh think time. A record's StartS is the
// moment the user sent, and its latency runs from there to the outcome.
// Bounded by length: every iteration advances next by at least the
// attempt's duration, and an attempt ends by its deadlines.
//
// A load spike's users start at begin (since start) instead of 0, and
// count, when not nil, counts their requests.
func (g *Generator) user(schedCtx, attemptCtx context.Context, driver Driver, think law.Law, c, u int, start time.Time, begin, length time.Duration, count *atomic.Int64) {
	rng := rand.New(rand.NewPCG(userSeed(g.cfg.Seed, c, u)))
	pathRng := mrand.New(mrand.NewSource(int64(rng.Uint64()))) // PathSource draws from math/rand
	paths := g.trace.Source(c, g.cfg.Clients)
	sleep := newTimerSleeper()
	defer sleep.close()
	target := (c + u) % len(g.targets)
	next := start.Add(begin + think.Draw(rng))
	for next.Sub(start) < length {
		if !sleep.until(schedCtx, next) {
			return
		}
		t := &g.targets[target]
		target = (target + 1) % len(g.targets)
		path := paths.Next(pathRng)
		// attempt records the request as the open loop does: sent, refused
		// or cut short, with its send lag.
		g.offered.Add(1)
		if count != nil {
			count.Add(1)
		}
		if g.flight != nil {
			g.flight.Started(c, next.Sub(start))
		}
		end := g.attempt(attemptCtx, driver, c, arrival{at: next.Sub(start), path: path}, next, t)
		if g.cutAt.Load() != 0 && attemptCtx.Err() != nil {
			return // Abandon: this user's attempt was recorded cut short
		}
		// The loop must move forward even if a driver reports an end at
		// (or, wrongly, before) the send.
		prev := next
		next = end.Add(think.Draw(rng))
		if !next.After(prev) {
			next = prev.Add(time.Nanosecond)
		}
	}
}

// newDriver builds client c's driver from the generator's config.
func (g *Generator) newDriver(c int) Driver { return g.newDriverUsers(c, g.cfg.Users) }

// newDriverUsers builds client c's driver for a pool of users (a load
// spike's extra users have a driver of their own).
func (g *Generator) newDriverUsers(c, users int) Driver {
	return drivers[g.cfg.Driver](DriverConfig{
		ConnectTimeout:  g.cfg.ConnectTimeout,
		ResponseTimeout: g.cfg.ResponseTimeout,
		Keepalive:       g.cfg.Keepalive,
		MaxConns:        g.cfg.MaxConns,
		Verify:          g.cfg.Verify,
		Client:          c,
		Users:           users,
		Flow:            g.cfg.Flow,
		Requests:        g.requests,
		TLS:             g.tls,
		MaxBody:         g.cfg.MaxBody,
		Seed:            g.cfg.Seed,
		KV:              g.cfg.KV,
		KVHistory:       g.kvHistory,
	})
}
