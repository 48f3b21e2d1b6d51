package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Event kinds that mark how a run ended.
const (
	EventRunEnd         = "run.end"
	EventRunInterrupted = "run.interrupted"
)

// Completeness says whether a results directory holds a whole run.
type Completeness struct {
	Complete bool
	// Reason says, when Complete is false, what was cut and what is left.
	Reason string
}

// EventWardenLost is the event a backend with a warden (netns) emits when
// the controller could not renew its lease: the warden then reverts every
// fault it holds, so the run no longer carries out its scenario.
const EventWardenLost = "warden.lost"

// EventFaultError is the event the fault scheduler emits when a fault
// could not be injected, cleared or reverted; its detail begins with the
// step that failed ("inject", "clear" or "revert"), the fault and its
// target, e.g. "clear bandwidth on node 2: ...".
const EventFaultError = "fault.error"

// RevertFailed reports whether e says that a fault's clear or revert
// failed: the fault may have outlived its planned end.
func RevertFailed(e Event) bool {
	return e.Kind == EventFaultError && (strings.HasPrefix(e.Detail, "clear ") || strings.HasPrefix(e.Detail, "revert "))
}

// InjectFailed reports whether e says that a fault could not be injected:
// the scenario's fault did not happen.
func InjectFailed(e Event) bool {
	return e.Kind == EventFaultError && strings.HasPrefix(e.Detail, "inject ")
}

// RunState tells from the files alone whether dir's run ended cleanly: a
// run.end event in events.jsonl, no run.interrupted event, and a finished
// request record (requests.parquet, not unmerged segments), no
// warden.lost event and no fault.error of a failed injection or revert. A directory
// without events.jsonl (e.g. requests.csv from another tool) counts as
// complete, since nothing says otherwise. A malformed events.jsonl is an
// error naming its line.
func RunState(dir string) (Completeness, error) {
	evPath := filepath.Join(dir, EventsFile)
	if _, err := os.Stat(evPath); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Completeness{Complete: true}, nil
		}
		return Completeness{}, err
	}
	events, err := ReadEvents(evPath)
	if err != nil {
		return Completeness{}, err
	}
	ended, interrupted := false, false
	var wardenLost, revertFailed, injectFailed string
	reverts, injects := 0, 0
	for _, e := range events {
		if InjectFailed(e) {
			if injects++; injectFailed == "" {
				injectFailed = fmt.Sprintf("at %.1f s: %s", e.TS, strings.ReplaceAll(e.Detail, "\n", "; "))
			}
		}
		if RevertFailed(e) {
			if reverts++; revertFailed == "" {
				revertFailed = fmt.Sprintf("at %.1f s: %s", e.TS, strings.ReplaceAll(e.Detail, "\n", "; "))
			}
		}
		switch e.Kind {
		case EventWardenLost:
			if wardenLost == "" {
				wardenLost = fmt.Sprintf("at %.1f s: %s", e.TS, e.Detail)
			}
		case EventRunEnd:
			ended = true
		case EventRunInterrupted:
			interrupted = true
		}
	}
	_, segErr := os.Stat(filepath.Join(dir, SegmentDir))
	_, singleErr := os.Stat(filepath.Join(dir, RequestsFile))
	unmerged := segErr == nil && singleErr != nil
	switch {
	case interrupted:
		return Completeness{Reason: "the run was interrupted (run.interrupted in " + EventsFile + "): faults were reverted and nodes stopped before its planned end"}, nil
	case !ended:
		return Completeness{Reason: fmt.Sprintf("the run was killed before it ended (%s has no %s event): requests up to the last closed segment of %s/ are kept, later ones and the open segment are lost", EventsFile, EventRunEnd, SegmentDir)}, nil
	case wardenLost != "":
		return Completeness{Reason: "the controller lost its lease with the warden (" + EventWardenLost + " " + wardenLost + "): the warden reverted the faults it held, so the record after that does not show the scenario's faults"}, nil
	case revertFailed != "":
		also := ""
		if reverts > 1 {
			also = fmt.Sprintf(" (%d reverts failed; the first is named)", reverts)
		}
		return Completeness{Reason: "a fault's revert failed (" + EventFaultError + " " + revertFailed + ")" + also +
			": the fault may have outlived its planned end, so the record after it does not show the scenario; the other faults were reverted"}, nil
	case injectFailed != "":
		also := ""
		if injects > 1 {
			also = fmt.Sprintf(" (%d injections failed; the first is named)", injects)
		}
		return Completeness{Reason: "a fault could not be injected (" + EventFaultError + " " + injectFailed + ")" + also +
			": the record does not show the scenario's fault there"}, nil
	case unmerged:
		return Completeness{Reason: fmt.Sprintf("the run ended but was killed while closing its record: %s/ was not merged into %s (requests up to its last closed segment are kept)", SegmentDir, RequestsFile)}, nil
	}
	return Completeness{Complete: true}, nil
}
