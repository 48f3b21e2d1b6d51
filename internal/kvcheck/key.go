package kvcheck

// Verdict is the class of one answered read.
type Verdict uint8

// The classes of a read (doc.go says exactly when each applies).
const (
	OK Verdict = iota
	Stale
	Lost
	Phantom
	numVerdicts
)

// NumVerdicts is the number of Verdict values.
const NumVerdicts = int(numVerdicts)

var verdictNames = [numVerdicts]string{"ok", "stale", "lost", "phantom"}

func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return "verdict(?)"
}

// KeyState is what one user knows about one of its keys. The kv driver
// keeps one per key to judge a read the moment it is answered (stale or
// phantom: data_error); the Checker keeps one too and also tells lost
// from stale. The zero value is a key never written.
type KeyState struct {
	Acked   uint64 // highest version whose write was acknowledged
	Written uint64 // highest version sent (acknowledged or not)
	Seen    uint64 // highest version an ok read returned
}

// Required is the lowest version a read may return now.
func (k *KeyState) Required() uint64 { return max(k.Acked, k.Seen) }

// Put notes a write of version v that was sent; acked says whether the
// service acknowledged it.
func (k *KeyState) Put(v uint64, acked bool) {
	k.Written = max(k.Written, v)
	if acked {
		k.Acked = max(k.Acked, v)
	}
}

// Get judges a read that returned version v (0: missing); garbage says the
// value was not one the user wrote for this key. It returns OK, Stale or
// Phantom (never Lost: that takes the reads that follow), and remembers an
// ok read's version for monotonic reads.
func (k *KeyState) Get(v uint64, garbage bool) Verdict {
	switch {
	case garbage || v > k.Written:
		return Phantom
	case v < k.Required():
		return Stale
	}
	k.Seen = max(k.Seen, v)
	return OK
}
