package press

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"time"
)

// CommFault names a fault inside the communication layer (Nagaraja et al. 2002, §4.2,
// §4.3), injected through the control endpoint.
type CommFault string

const (
	// MemAllocFail: send and receive buffers cannot be allocated. perf and
	// ha allocate per message, so their sends wait and their receivers stop
	// reading; robust pre-allocates its channel buffers and is immune.
	MemAllocFail CommFault = "mem-alloc-fail"
	// MemPinFail: pinnable physical memory runs out (Nagaraja et al. 2002, §4.2). Only
	// via5 pins memory dynamically (every cached page, for zero-copy
	// sends): it drops cached files until the cache fits in the fraction
	// Pinnable of its capacity. The other modes are immune.
	MemPinFail CommFault = "mem-pin-fail"
	// BadParamNull: send() is passed a NULL data pointer and fails with
	// EFAULT; the message is lost in perf, ha and robust. The VIA modes
	// fail fast on the descriptor error (via3 and via5 on both ends), as
	// they do for the two off-by-N faults below.
	BadParamNull CommFault = "bad-param-null"
	// BadParamOffset: the data pointer is off by N (1..100) bytes; the
	// payload arrives shifted, with N bytes of stale memory at its end.
	BadParamOffset CommFault = "bad-param-offset"
	// BadParamSize: the size is off by N (±1..100) bytes; the stream
	// carries N bytes too few or too many.
	BadParamSize CommFault = "bad-param-size"
	// Slow: every message waits Delay before it is sent.
	Slow CommFault = "slow"
)

// FaultSpec is one comm fault as the control endpoint receives it.
type FaultSpec struct {
	Type        CommFault `json:"type"`
	Duration    string    `json:"duration"`              // Go duration, > 0: the fault reverts itself then
	Probability float64   `json:"probability,omitempty"` // per message; default 1
	Count       int       `json:"count,omitempty"`       // messages to hit at most; 0 = no limit
	N           int       `json:"n,omitempty"`           // bad-param-*: the offset; default drawn from 1..100
	Delay       string    `json:"delay,omitempty"`       // slow: per-message delay; default 100ms
	Pinnable    float64   `json:"pinnable,omitempty"`    // mem-pin-fail: fraction of the cache that can stay pinned, [0, 1); default 0.25
}

type activeFault struct {
	ID       int       `json:"id"`
	Type     CommFault `json:"type"`
	Until    time.Time `json:"until"`
	prob     float64
	left     int // remaining hits; -1 = unlimited
	n        int
	delay    time.Duration
	pinnable float64
}

// MaxFaultDuration bounds a comm fault, so none outlives a lost controller.
const MaxFaultDuration = time.Hour

// commFaults is the interposition layer between the node and its sockets,
// like Mendosus's library between PRESS and send()/recv(). Safe for
// concurrent use.
type commFaults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	active []*activeFault
	nextID int
	now    func() time.Time
}

func newCommFaults(seed int64) *commFaults {
	return &commFaults{rng: rand.New(rand.NewSource(seed)), now: time.Now}
}

func (f *commFaults) add(s FaultSpec) (*activeFault, error) {
	d, err := time.ParseDuration(s.Duration)
	if err != nil || d <= 0 || d > MaxFaultDuration {
		return nil, fmt.Errorf("fault %s: duration %q must be a Go duration in (0, %v]", s.Type, s.Duration, MaxFaultDuration)
	}
	a := &activeFault{Type: s.Type, Until: f.now().Add(d), prob: s.Probability, left: -1, n: s.N}
	if a.prob == 0 {
		a.prob = 1
	}
	if a.prob < 0 || a.prob > 1 {
		return nil, fmt.Errorf("fault %s: probability %v outside [0, 1]", s.Type, s.Probability)
	}
	if s.Count < 0 || s.N < 0 || s.N > 100 {
		return nil, fmt.Errorf("fault %s: count %d and n %d must be non-negative, n at most 100", s.Type, s.Count, s.N)
	}
	if s.Count > 0 {
		a.left = s.Count
	}
	switch s.Type {
	case MemAllocFail, BadParamNull, BadParamOffset, BadParamSize:
	case MemPinFail:
		a.pinnable = DefaultPinnable
		if s.Pinnable != 0 {
			a.pinnable = s.Pinnable
		}
		if !(a.pinnable > 0 && a.pinnable < 1) {
			return nil, fmt.Errorf("fault mem-pin-fail: pinnable %v must be in (0, 1)", s.Pinnable)
		}
	case Slow:
		a.delay = 100 * time.Millisecond
		if s.Delay != "" {
			if a.delay, err = time.ParseDuration(s.Delay); err != nil || a.delay <= 0 || a.delay > time.Minute {
				return nil, fmt.Errorf("fault slow: delay %q must be a Go duration in (0, 1m]", s.Delay)
			}
		}
	default:
		return nil, fmt.Errorf("unknown comm fault %q (want mem-alloc-fail, mem-pin-fail, bad-param-null, bad-param-offset, bad-param-size or slow)", s.Type)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	a.ID = f.nextID
	f.active = append(f.active, a)
	return a, nil
}

// remove reverts one fault; false if it was not (or no longer) active.
func (f *commFaults) remove(id int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.active {
		if a.ID == id {
			f.active = append(f.active[:i], f.active[i+1:]...)
			return true
		}
	}
	return false
}

func (f *commFaults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = nil
}

func (f *commFaults) list() []activeFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireLocked()
	out := make([]activeFault, 0, len(f.active))
	for _, a := range f.active {
		out = append(out, *a)
	}
	return out
}

func (f *commFaults) expireLocked() {
	now := f.now()
	kept := f.active[:0]
	for _, a := range f.active {
		if now.Before(a.Until) && a.left != 0 {
			kept = append(kept, a)
		}
	}
	f.active = kept
}

// allocBlocked reports whether buffer allocation fails right now.
func (f *commFaults) allocBlocked() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireLocked()
	for _, a := range f.active {
		if a.Type == MemAllocFail {
			return true
		}
	}
	return false
}

// DefaultPinnable is the fraction of its cache a via5 node can keep pinned
// during a mem-pin-fail fault unless the fault says otherwise.
const DefaultPinnable = 0.25

// pinnable returns the smallest pinnable fraction of the active mem-pin-fail
// faults, and whether there is one.
func (f *commFaults) pinnable() (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireLocked()
	frac, any := 1.0, false
	for _, a := range f.active {
		if a.Type == MemPinFail {
			frac, any = min(frac, a.pinnable), true
		}
	}
	return frac, any
}

// sendAction is what the fault layer does to one outgoing frame.
type sendAction struct {
	drop  bool          // bad-param-null: send fails with EFAULT
	delay time.Duration // slow
	kind  CommFault     // the fault that hit, for events
}

// onSend decides the fate of one outgoing frame and corrupts it in place (or
// returns a replacement) for bad-param-offset and bad-param-size.
func (f *commFaults) onSend(frame []byte) ([]byte, sendAction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expireLocked()
	var act sendAction
	for _, a := range f.active {
		if a.Type == MemAllocFail || a.Type == MemPinFail || f.rng.Float64() >= a.prob {
			continue
		}
		if a.left > 0 {
			a.left--
		}
		act.kind = a.Type
		n := a.n
		if n == 0 {
			n = 1 + f.rng.Intn(100)
		}
		switch a.Type {
		case Slow:
			act.delay += a.delay
		case BadParamNull:
			act.drop = true
			return frame, act
		case BadParamOffset:
			lo, hi := payloadRange(frame)
			p := frame[lo:hi]
			if n > len(p) {
				n = len(p)
			}
			copy(p, p[n:])
			for i := len(p) - n; i < len(p); i++ {
				p[i] = byte(f.rng.Intn(256)) // stale memory past the buffer
			}
		case BadParamSize:
			if f.rng.Intn(2) == 0 && n < len(frame) {
				frame = frame[:len(frame)-n]
			} else {
				for range n {
					frame = append(frame, byte(f.rng.Intn(256)))
				}
			}
		}
	}
	return frame, act
}

// payloadRange is the part of a frame that PRESS hands to send() as its data
// buffer: the page of a file message, the whole body otherwise.
func payloadRange(frame []byte) (lo, hi int) {
	n := int(binary.BigEndian.Uint32(frame[lenOffset:]))
	lo, hi = headerLen, headerLen+n
	if MsgType(frame[2]) == MsgFile && n >= 13 {
		lo += 13
	}
	return lo, hi
}
