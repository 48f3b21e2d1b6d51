// Package press is faultbench's PRESS: a cluster web server after Carrera and
// Bianchini's locality-aware, cooperative-caching server, as studied by
// Nagaraja et al. (2002) and Broadwell (2004).
//
// Any node accepts an HTTP request for a page. It serves the page from its
// memory cache; else forwards the request to a node that caches the page
// (the least loaded one, judged by the open-connection count every
// intra-cluster message carries); else reads it from its page set, caches it
// and broadcasts the caching change. Intra-cluster messages (forward, file,
// cache update, heartbeat, join, view) travel over TCP between the nodes'
// intra-cluster addresses, which may be faultnet proxies.
//
// Three modes share that design and differ where the papers found defects:
//
//   - perf: failures are detected only by broken connections; the serving
//     path sends and waits synchronously (PRESS's single coordinating thread
//     stuck in TCP), so a hung peer or a blackholed link stalls every node
//     that needs it; a removed node returns only when the whole cluster is
//     restarted.
//   - ha: a heartbeat ring, 3 missed beats = failed, reconfiguration and
//     automatic rejoin of a restarted node; faithfully, no merge after a
//     partition, and per-sender sequence numbers whose gaps (after a short
//     hang, or messages dropped on a full queue) make receivers drop
//     messages and invalidate directory entries.
//   - robust: our fix: all-to-all heartbeats that also merge partitions,
//     per-message timeouts (send deadline, forward timeout with fallback to
//     the page set), checksummed and resynchronising message framing,
//     pre-allocated communication buffers, and explicit 503 load shedding.
//
// The protocol lives in Core, a deterministic state machine advanced only by
// messages, ticks and requests (like etcd raft's RawNode); Node is the thin
// layer of goroutines, sockets and timers around it. See docs/press.md.
package press
