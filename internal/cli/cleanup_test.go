package cli

import (
	"strings"
	"testing"
)

// cleanup --run takes a run id, never a path: anything else is bad input,
// before any journal is read.
func TestCleanupRunRefusesWhatIsNotARunID(t *testing.T) {
	for _, id := range []string{"", "../../etc/passwd", "0123456789AB", "0123456789abc"} {
		_, stderr, code := run(t, "cleanup", "--run", id)
		if code != ExitBadInput || !strings.Contains(stderr, "want 12 hex digits") {
			t.Errorf("cleanup --run %q: exit %d, %q; want 2 saying what a run id is", id, code, stderr)
		}
	}
}
