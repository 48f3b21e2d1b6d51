package benchcpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's utime and stime (USER_HZ,
// 100 on Linux whatever the kernel's HZ).
const clockTick = 10 * time.Millisecond

// Of is the CPU time, user and system, that process pid has used so far,
// every thread counted (exited ones too), from /proc/PID/stat; pid 0 is
// this process. Its resolution is a clock tick, 10 ms: for another
// process, or for a span long enough that ticks do not matter.
func Of(pid int) (time.Duration, error) {
	name := "/proc/self/stat"
	if pid != 0 {
		name = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count fields after its closing one. utime and stime are fields 14
	// and 15, so the 12th and 13th after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command name in parentheses", name)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least 13", name, len(f))
	}
	var total time.Duration
	for _, v := range f[11:13] {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		total += time.Duration(t) * clockTick
	}
	return total, nil
}
