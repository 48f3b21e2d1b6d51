package kernelfault

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetns runs f on an OS thread that joined the network namespace at
// path; sockets f opens live there. The thread returns to this process's
// namespace after, or is discarded if it cannot.
func InNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return // the thread ends with the goroutine: it never left
		}
		defer self.Close()
		target, err := os.Open(path)
		if err != nil {
			errc <- err
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			runtime.UnlockOSThread()
			return
		}
		err = f()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else: the locked thread dies with this goroutine
		errc <- err
	}()
	return <-errc
}
