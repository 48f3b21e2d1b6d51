package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/systems/ssm/stub"
	"github.com/faultbench/faultbench/internal/systems/ssm/wire"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32Update(c uint32, p []byte) uint32 { return crc32.Update(c, castagnoli, p) }

// KeyOf is the session key of a user: the first 16 bytes of SHA-256(user).
func KeyOf(user string) wire.Key {
	sum := sha256.Sum256([]byte(user))
	var k wire.Key
	copy(k[:], sum[:])
	return k
}

// Backend stores sessions for the front end. Load and Save are called
// concurrently for different users, never for the same user at once in a
// well-behaved workload (session state is accessed serially, Ling, Kiciman and Fox 2004, §2).
//
// Both return the stub's sentinel errors so that every backend maps to the
// same HTTP answers: stub.ErrCookieCorrupt, ErrStateExpired, ErrStateLost
// (the store does not hold the state), ErrStateCorrupt (it holds a value that
// does not match the cookie: damaged, or overwritten by a write the client
// never saw), ErrOverloaded, ErrUnavailable, ErrTimeout; ErrCookieUser for
// a cookie of another user.
type Backend interface {
	// Load returns the value the cookie names; the caller owns it.
	Load(ctx context.Context, user, cookie string) ([]byte, error)
	// Save stores value as user's session until expiry and returns the
	// cookie for the next Load.
	Save(ctx context.Context, user string, value []byte, expiry time.Time) (string, error)
	Close() error
}

// ErrCookieUser: a well-formed cookie of another user's session.
var ErrCookieUser = errors.New("cookie of another user")

// parseCookie decodes a cookie and checks it belongs to user.
func parseCookie(user, s string) (stub.Cookie, error) {
	ck, err := stub.ParseCookie(s)
	if err != nil {
		return ck, err
	}
	if ck.Key != KeyOf(user) {
		return ck, fmt.Errorf("%w: the cookie's key is not %q's", ErrCookieUser, user)
	}
	if !ck.Expiry.After(time.Now()) {
		return ck, fmt.Errorf("%w: expired at %s", stub.ErrStateExpired, ck.Expiry.UTC().Format(time.RFC3339))
	}
	return ck, nil
}

// localCookie is the cookie of the memory and file backends: the stub's
// format naming brick 0, "this front end".
func localCookie(user string, value []byte, expiry time.Time) string {
	return stub.Cookie{Key: KeyOf(user), Expiry: expiry, Checksum: wire.Checksum(value), Bricks: []uint16{0}}.String()
}

// SSM stores sessions on bricks through a stub.
type SSM struct{ Stub *stub.Stub }

func (b SSM) Load(ctx context.Context, user, cookie string) ([]byte, error) {
	ck, err := parseCookie(user, cookie)
	if err != nil {
		return nil, err
	}
	return b.Stub.Read(ctx, ck)
}

func (b SSM) Save(ctx context.Context, user string, value []byte, expiry time.Time) (string, error) {
	ck, err := b.Stub.Write(ctx, KeyOf(user), value, expiry)
	if err != nil {
		return "", err
	}
	return ck.String(), nil
}

func (b SSM) Close() error { return b.Stub.Close() }

// Memory keeps sessions in this process's memory: fast, and lost with the
// process (the original Email-By-Phone application of Ling, Kiciman and Fox 2004, §6).
type Memory struct {
	mu sync.Mutex
	m  map[wire.Key][]byte
}

// NewMemory returns an empty memory backend.
func NewMemory() *Memory { return &Memory{m: map[wire.Key][]byte{}} }

func (b *Memory) Load(ctx context.Context, user, cookie string) ([]byte, error) {
	ck, err := parseCookie(user, cookie)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	v, ok := b.m[ck.Key]
	b.mu.Unlock()
	return checkLocal(ck, v, ok)
}

func checkLocal(ck stub.Cookie, v []byte, ok bool) ([]byte, error) {
	if !ok {
		return nil, fmt.Errorf("%w: no session stored", stub.ErrStateLost)
	}
	if wire.Checksum(v) != ck.Checksum {
		return nil, fmt.Errorf("%w: stored session does not match the cookie", stub.ErrStateCorrupt)
	}
	return append([]byte(nil), v...), nil
}

func (b *Memory) Save(ctx context.Context, user string, value []byte, expiry time.Time) (string, error) {
	b.mu.Lock()
	b.m[KeyOf(user)] = append([]byte(nil), value...)
	b.mu.Unlock()
	return localCookie(user, value, expiry), nil
}

func (b *Memory) Close() error { return nil }

// File keeps each session in its own file under Dir, written to a temporary
// file, fsync'd and renamed, then the directory fsync'd: it survives a crash
// of the front end, at the cost of a disk write per request (Ling, Kiciman and Fox 2004, §6's
// disk baseline).
type File struct{ Dir string }

// NewFile creates dir if needed.
func NewFile(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ssm app: file backend: %w", err)
	}
	return &File{Dir: dir}, nil
}

func (b *File) path(k wire.Key) string { return filepath.Join(b.Dir, hex.EncodeToString(k[:])) }

func (b *File) Load(ctx context.Context, user, cookie string) ([]byte, error) {
	ck, err := parseCookie(user, cookie)
	if err != nil {
		return nil, err
	}
	v, err := os.ReadFile(b.path(ck.Key))
	if errors.Is(err, os.ErrNotExist) {
		return checkLocal(ck, nil, false)
	}
	if err != nil {
		return nil, err
	}
	return checkLocal(ck, v, true)
}

func (b *File) Save(ctx context.Context, user string, value []byte, expiry time.Time) (string, error) {
	k := KeyOf(user)
	tmp, err := os.CreateTemp(b.Dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(value)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), b.path(k))
	}
	if err == nil {
		err = syncDir(b.Dir)
	}
	if err != nil {
		return "", fmt.Errorf("ssm app: file backend: %w", err)
	}
	return localCookie(user, value, expiry), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (b *File) Close() error { return nil }
