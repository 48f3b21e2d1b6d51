package kernelfault

import (
	"context"
	"fmt"
	"runtime"
	"strconv"

	"github.com/faultbench/faultbench/internal/node"
)

// Node kinds of the helper processes cpu-hog and mem-pressure run in a
// node's cgroup (Helper). They are node kinds of the faultbench binary,
// so that whoever applies the fault (the warden, or a docker exec in a
// container of that binary) starts the same program.
const (
	HelperBurner  = "burner"  // cpu-hog: --option cpus=N busy threads
	HelperBalloon = "balloon" // mem-pressure: --option bytes=N resident bytes
)

func init() {
	node.Register(HelperBurner, burn)
	node.Register(HelperBalloon, balloon)
}

// burn keeps cpus threads busy until ctx ends (SIGTERM) or it is killed.
func burn(ctx context.Context, cfg node.Config) error {
	cpus, err := strconv.Atoi(cfg.Options["cpus"])
	if err != nil || cpus < 1 || cpus > 64 {
		return fmt.Errorf("%w: option cpus=%q: want 1..64", node.ErrConfig, cfg.Options["cpus"])
	}
	runtime.GOMAXPROCS(cpus + 1)
	for range cpus {
		go func() {
			runtime.LockOSThread()
			x := uint64(1)
			for ctx.Err() == nil {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	<-ctx.Done()
	return nil
}

// pageSize is the stride at which the balloon touches its memory.
const pageSize = 4096

// balloonMem keeps the balloon's memory reachable.
var balloonMem []byte

// balloon allocates and touches bytes of memory, so that they are
// resident, and holds them until ctx ends or it is killed.
func balloon(ctx context.Context, cfg node.Config) error {
	n, err := strconv.ParseInt(cfg.Options["bytes"], 10, 64)
	if err != nil || n <= 0 || n > maxBalloon {
		return fmt.Errorf("%w: option bytes=%q: want a positive size up to 64G", node.ErrConfig, cfg.Options["bytes"])
	}
	balloonMem = make([]byte, n)
	for i := 0; i < len(balloonMem); i += pageSize {
		balloonMem[i] = 1
	}
	<-ctx.Done()
	return nil
}
