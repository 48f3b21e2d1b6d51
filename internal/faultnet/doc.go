// Package faultnet puts a userspace TCP proxy on every intra-cluster link so
// that network faults need no root and never touch client traffic.
//
// A Link listens on one address and forwards every accepted connection to one
// upstream address, pumping each byte direction separately. Its fault State is
// set at run time: down (Cut refuses new connections and resets existing ones,
// as a fail-stop network that reports errors; Hold accepts and blackholes,
// as an unplugged cable under TCP, which keeps retransmitting), per-chunk
// delay, loss (emulated as TCP would feel it: a chunk is delayed by about one
// retransmission timeout with probability p), bandwidth (token bucket) and
// flaky (alternating up and down). Every Set returns a revert; overlapping
// Sets compose, and reverting one leaves the others in force.
//
// A Net owns one Link per ordered node pair i→j: node i reaches node j at
// Net.Addr(i, j). Helpers cut one link (both directions), all links of a node,
// every link (switch-down) or every link between groups (partition).
//
// Randomness (loss) comes only from the seed given to Listen or NewNet.
// Close stops accepting, closes every proxied connection and waits for every
// goroutine, so a closed Link leaves no port and no goroutine behind.
package faultnet
