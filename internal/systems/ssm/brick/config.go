package brick

import (
	"errors"
	"fmt"
	"time"
)

// Config configures one brick. Start from DefaultConfig; Validate runs
// before any socket is opened.
type Config struct {
	ID          uint16 // brick id announced in beacons and named in cookies: the node number
	Incarnation uint64 // distinguishes restarts; default from the clock

	// BeaconInterval is how often the brick announces itself on every stub
	// stream (Ling, Kiciman and Fox 2004, §3.1). Stubs declare it dead after missing a few.
	BeaconInterval time.Duration
	// Generation is the width of one expiry generation (§3.3).
	Generation time.Duration
	// MaxValue bounds a stored value; larger writes answer TooLarge.
	MaxValue int
	// InboxLen bounds the shared inbox; when it is full the stream readers
	// block, which pushes back on the stubs through TCP.
	InboxLen int
	// DiscardExpired drops a request whose budget has run out by the time
	// it is dequeued (§3.4). Off reproduces the overload collapse.
	DiscardExpired bool
	// ExitOnCorrupt makes the brick crash (OnCrash) when a read finds a value
	// that fails its checksum, as in §5.6.
	ExitOnCorrupt bool
	// Slow is an initial per-message delay (the slow fault, §5.8).
	Slow time.Duration
	// Procs is how many threads may run Go code at once (GOMAXPROCS) in a
	// process that serves this brick alone (`faultbench node ssm-brick`,
	// node.Config.Alone); bricks sharing a process (tests, benchmarks)
	// leave the process as it is. The paper's brick does its work on one
	// main processing thread (Figure 2), its stream readers only hand
	// requests to it; with the default, 1, they take turns on one thread,
	// as Redis serves from one. With more, each hand-off from a reader to
	// the processing goroutine can wake another thread, which costs more
	// than it buys (docs/benchmarks.md, SSM); run more bricks to use more
	// cores.
	Procs int

	// ControlToken enables POST /control; requests must carry
	// "Authorization: Bearer <token>". Empty disables the endpoint.
	ControlToken string

	Seed int64 // drives bit-flip choices

	// Passive selects the passive replication style (passive.go): the
	// brick keeps a stream to every address of Replicas (the other
	// bricks, whose ids it learns from their beacons) and every
	// BackupInterval ships the writes stubs sent it to the Degree−1
	// lowest-numbered of them that are alive; a peer is dead when its
	// stream breaks or it sent no beacon for PeerTimeout. Off (the active
	// style), bricks never talk to each other.
	Passive        bool
	Degree         int
	Replicas       []string
	BackupInterval time.Duration
	PeerTimeout    time.Duration

	// OnCrash is called by the crash control action and ExitOnCorrupt; the
	// node program exits the process. Nil closes the brick instead.
	OnCrash func(reason string)
	// OnEvent receives system.* events (stub connected, fault set); it must
	// not block. Nil drops them.
	OnEvent func(kind, detail string)
}

// DefaultConfig is the configuration of the paper's experiments.
func DefaultConfig() Config {
	return Config{
		BeaconInterval: 100 * time.Millisecond,
		Generation:     time.Second,
		MaxValue:       256 << 10,
		InboxLen:       1 << 16,
		DiscardExpired: true,
		Procs:          1,
		Degree:         3,
		BackupInterval: 10 * time.Millisecond,
		PeerTimeout:    500 * time.Millisecond,
	}
}

// ErrConfig wraps every validation failure.
var ErrConfig = errors.New("ssm brick: bad config")

// Validate reports the first impossible setting.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: brick %d: %s", ErrConfig, c.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case c.ID == 0:
		return bad("id must be 1 or more")
	case c.BeaconInterval <= 0:
		return bad("beacon_interval %v must be positive", c.BeaconInterval)
	case c.Generation < time.Millisecond:
		return bad("generation %v must be at least 1ms", c.Generation)
	case c.MaxValue < 1 || c.MaxValue > 64<<20:
		return bad("max_value %d must be in [1, 64 MiB]", c.MaxValue)
	case c.InboxLen < 1:
		return bad("inbox %d must be positive", c.InboxLen)
	case c.Slow < 0:
		return bad("slow %v is negative", c.Slow)
	case c.Procs < 1 || c.Procs > 1024:
		return bad("procs %d must be in [1, 1024]", c.Procs)
	case c.Passive && (c.Degree < 1 || c.Degree > 255):
		return bad("w=%d (the passive style's degree: the primary and w−1 backups) must be in [1, 255]", c.Degree)
	case c.Passive && (c.BackupInterval < time.Millisecond || c.BackupInterval > time.Minute):
		return bad("backup_interval %v must be in [1ms, 1m]", c.BackupInterval)
	case c.Passive && c.PeerTimeout <= 0:
		return bad("beacon_timeout %v must be positive", c.PeerTimeout)
	}
	return nil
}
