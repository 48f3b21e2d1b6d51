// Package kvcheck classifies the reads of a key-value workload against the
// writes that preceded them: the read-your-writes checker of the kv driver
// (docs/real-services.md).
//
// # What it checks
//
// Every key belongs to one emulated user, who writes it with versions that
// only grow (1, 2, 3, ...; a version is never reused, even when its write
// got no answer) and who makes one request at a time. For each answered
// read of a key by its user, the checker knows three versions:
//
//   - acked: the highest version whose write the service acknowledged;
//   - written: the highest version the user ever sent (acknowledged or not:
//     a write that timed out may still have been applied);
//   - seen: the highest version an earlier read of the key returned.
//
// A read that returned version v (0: the key was missing) is
//
//   - ok when max(acked, seen) <= v <= written and its value is the one
//     written for (key, v);
//   - phantom when v > written, or its value is not a value the user wrote
//     for that key (garbage, another key's value);
//   - stale when v < max(acked, seen): it missed a write acknowledged
//     before the read began (read your writes), or went back behind a
//     version an earlier read had returned (monotonic reads);
//   - lost when it was stale and no later read of the key ever returned
//     the version it should have seen, although a later read was made and
//     also missed it: the acknowledged write (or the seen version) was
//     never seen again.
//
// Stale and lost can only be told apart later, so a stale read waits in a
// per-key list until a later read resolves it (saw the version: stale) or
// the history ends (missed by a later read too: lost; no later read: stale,
// since nothing showed the write was gone).
//
// # What it does not check
//
// It is not a linearizability checker: it never compares one user's
// operations with another's (keys are not shared), so it cannot see a read
// that returned a value older than another user's acknowledged write, lost
// updates between concurrent writers, or real-time order across clients.
// It does not check writes that got no answer beyond allowing their values
// to be read. Reads that got no answer are not classified (their outcome
// says what happened).
//
// # Limits
//
// Memory grows with the number of keys (one small state each) and with the
// stale reads still waiting to be resolved, at most MaxPending per key: when
// a key has more, the oldest is declared lost (it went unseen for
// MaxPending later reads). Windows beyond MaxWindows are an error.
package kvcheck
