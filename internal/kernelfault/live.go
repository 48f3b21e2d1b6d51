package kernelfault

import "sync"

// Some faults keep something running in the process that applied them: a
// Delayer's queue (Queueing) or a helper process (Helper). Apply holds it
// here by the fault's id and Revert takes it back. A process that did not
// apply the fault (cleanup replaying a dead run's journal) finds nothing
// and removes, by name, what the kernel still holds.
var held = struct {
	sync.Mutex
	m map[string]any
}{m: map[string]any{}}

func hold(id string, v any) {
	held.Lock()
	held.m[id] = v
	held.Unlock()
}

// release removes and returns what id holds, or nil.
func release(id string) any {
	held.Lock()
	defer held.Unlock()
	v := held.m[id]
	delete(held.m, id)
	return v
}
