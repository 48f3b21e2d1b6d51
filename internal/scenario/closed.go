package scenario

import (
	"fmt"

	"github.com/faultbench/faultbench/internal/law"
)

// validateClosed checks workload.model: closed: users set their own pace,
// so the open loop's rate and knee search do not apply, and think must be
// 0, fixed(D) or exponential(MEAN).
func (sc *Scenario) validateClosed() []error {
	w := sc.Workload
	var errs []error
	at := func(key string) string {
		return fmt.Sprintf("%s:%d: workload.%s", sc.file, keyLine(sc.root, "workload", key), key)
	}
	if w.Rate != 0 {
		errs = append(errs, fmt.Errorf("%s: closed-loop users set their own rate; leave rate out and give users and think", at("rate")))
	}
	if w.Knee != nil {
		errs = append(errs, fmt.Errorf("%s: a knee search offers open-loop rates; it does not apply to closed-loop users", at("knee")))
	}
	switch w.Think {
	case "", "0", "0s":
	default:
		l, err := law.Parse(w.Think)
		if err != nil || l.Is("gaussian") {
			errs = append(errs, fmt.Errorf("%s: %q: want 0 (back to back), fixed(D) or exponential(MEAN), e.g. exponential(8ms)", at("think"), w.Think))
		}
	}
	return errs
}
