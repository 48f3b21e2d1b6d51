package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// profiles are the Go pprof profiles of one command, asked for with the
// hidden flags --cpuprofile FILE and --memprofile FILE: how bench/
// profiles `faultbench run` as a user runs it (docs/benchmarks.md). They
// are hidden because they serve the people who make faultbench faster,
// not its users.
type profiles struct {
	cpuPath, memPath string
	cpuFile          *os.File
}

// addProfileFlags adds the flags to root; the profiles start before the
// command runs, and stop ends them whether it succeeded or not.
func addProfileFlags(root *cobra.Command) *profiles {
	p := &profiles{}
	flags := root.PersistentFlags()
	flags.StringVar(&p.cpuPath, "cpuprofile", "", "write a CPU profile of the command to FILE")
	flags.StringVar(&p.memPath, "memprofile", "", "write an allocation profile of the command to FILE when it ends")
	_ = flags.MarkHidden("cpuprofile")
	_ = flags.MarkHidden("memprofile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
	return p
}

func (p *profiles) start() error {
	if p.memPath != "" {
		runtime.MemProfileRate = 64 << 10
	}
	if p.cpuPath == "" {
		return nil
	}
	f, err := os.Create(p.cpuPath)
	if err != nil {
		return BadInput(fmt.Errorf("--cpuprofile: %w", err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return Failed(fmt.Errorf("--cpuprofile: %w", err))
	}
	p.cpuFile = f
	return nil
}

// stop ends the CPU profile and writes the allocation profile; safe when
// neither was asked for or the command never started.
func (p *profiles) stop() error {
	var err error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		err = p.cpuFile.Close()
		p.cpuFile = nil
	}
	if p.memPath != "" {
		f, ferr := os.Create(p.memPath)
		if ferr != nil {
			return errors.Join(err, Failed(fmt.Errorf("--memprofile: %w", ferr)))
		}
		err = errors.Join(err, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		p.memPath = ""
	}
	if err != nil {
		return Failed(err)
	}
	return nil
}
