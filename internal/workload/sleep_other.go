//go:build !linux

package workload

import "context"

func newSleeper(context.Context) sleeper { return newTimerSleeper() }
