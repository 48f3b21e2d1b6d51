// Package control is the raid node's control API: the wire types, their
// strict decoders (which the node uses and the fuzz tests exercise) and a
// Go client for the fault injectors, the operator model and the runner's
// metric sampler.
//
// Every endpoint needs "Authorization: Bearer TOKEN", TOKEN being the node's
// control_token option; without one configured the API is disabled.
//
//	POST   /control/fault        FaultRequest -> 201 FaultResponse
//	DELETE /control/fault/{id}   revert -> 200 {"id": N}
//	POST   /control/maintenance  MaintenanceRequest -> 200 MaintenanceResponse
//	GET    /control/status       -> 200 Status
//	GET    /control/events?after=SEQ -> 200 EventsResponse
//
// Errors are JSON {"error": "..."} with 400 (bad request: unknown fault
// type, mode or action, a disk that does not exist), 401 (no or wrong token),
// 403 (API disabled), 404 (unknown fault id), 409 (the action does not apply
// in the array's state) or 503 (the node is shutting down).
package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/faultbench/faultbench/internal/systems/raid/array"
	"github.com/faultbench/faultbench/internal/systems/raid/disk"
)

// FaultRequest injects a docs/scenario.md disk fault into one disk.
type FaultRequest struct {
	Type string `json:"type"`           // disk-read-correctable ... disk-remove
	Disk int    `json:"disk"`           // bay number, 1-based
	Mode string `json:"mode,omitempty"` // transient (default) | sticky
}

// FaultResponse names the injected fault, for DELETE /control/fault/{id}.
type FaultResponse struct {
	ID int `json:"id"`
}

// Maintenance actions (docs/scenario.md maintenance events, plus the operator's
// add-spare and force).
const (
	ReplaceDisk         = "replace-disk"         // disk: the bay whose disk is swapped for a blank spare
	StartReconstruction = "start-reconstruction" // disk: the spare to rebuild onto (0: any)
	RemoveWrongDisk     = "remove-wrong-disk"    // disk: the live disk pulled by mistake; returns a fault id whose revert reinserts it
	AddSpare            = "add-spare"            // returns the new bay in Disk
	Force               = "force"                // bring a failed volume back with the disks present
)

// Actions lists the maintenance actions.
var Actions = []string{ReplaceDisk, StartReconstruction, RemoveWrongDisk, AddSpare, Force}

// MaintenanceRequest is one operator action.
type MaintenanceRequest struct {
	Action string `json:"action"`
	Disk   int    `json:"disk,omitempty"`
}

// MaintenanceResponse reports what an action did.
type MaintenanceResponse struct {
	Action string `json:"action"`
	ID     int    `json:"id,omitempty"`   // remove-wrong-disk: the fault to revert to reinsert the disk
	Disk   int    `json:"disk,omitempty"` // add-spare: the new bay
}

// Status is GET /control/status: the array's state plus the front end's
// counters. Redundancy and Rebuild.Progress are the metric series.
type Status struct {
	array.Status
	Requests  int64 `json:"requests"`   // page requests served or refused
	LogBytes  int64 `json:"log_bytes"`  // access-log bytes written to the volume
	LogErrors int64 `json:"log_errors"` // access-log flushes the volume refused
	Conns     int64 `json:"conns"`      // client connections open now (the status request's own included)
	InFlight  int   `json:"in_flight"`  // requests at work on the volume now (at most max_requests)
	Queued    int64 `json:"queued"`     // requests waiting for a turn now (at most max_queued)
	Refused   int64 `json:"refused"`    // requests refused with 503 because the front end was busy
}

// Event is one line of the node's event log (and of GET /control/events):
// an array event with a sequence number.
type Event struct {
	Seq int64 `json:"seq"`
	array.Event
}

// EventsResponse carries the events after a sequence number; Next is the
// value to pass as after on the next call.
type EventsResponse struct {
	Events []Event `json:"events"`
	Next   int64   `json:"next"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
}

// MaxRequestBody bounds control request bodies.
const MaxRequestBody = 4096

// ErrBadRequest is returned (wrapped) by the decoders.
var ErrBadRequest = errors.New("bad request")

func decodeStrict(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, MaxRequestBody+1))
	if err != nil {
		return fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
	}
	if len(body) > MaxRequestBody {
		return fmt.Errorf("%w: body larger than %d bytes", ErrBadRequest, MaxRequestBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrBadRequest)
	}
	return nil
}

// DecodeFault reads and validates a FaultRequest for an array with disks
// bays numbered 1..disks.
func DecodeFault(r io.Reader, disks int) (FaultRequest, disk.Kind, disk.Mode, error) {
	var req FaultRequest
	if err := decodeStrict(r, &req); err != nil {
		return req, 0, 0, err
	}
	k, err := disk.ParseKind(req.Type)
	if err != nil {
		return req, 0, 0, fmt.Errorf("%w: type: %v", ErrBadRequest, err)
	}
	m, err := disk.ParseMode(req.Mode)
	if err != nil {
		return req, 0, 0, fmt.Errorf("%w: mode: %v", ErrBadRequest, err)
	}
	if req.Disk < 1 || req.Disk > disks {
		return req, 0, 0, fmt.Errorf("%w: disk %d does not exist (disks are numbered 1 to %d)", ErrBadRequest, req.Disk, disks)
	}
	return req, k, m, nil
}

// DecodeMaintenance reads and validates a MaintenanceRequest.
func DecodeMaintenance(r io.Reader, disks int) (MaintenanceRequest, error) {
	var req MaintenanceRequest
	if err := decodeStrict(r, &req); err != nil {
		return req, err
	}
	switch req.Action {
	case ReplaceDisk, RemoveWrongDisk:
		if req.Disk < 1 || req.Disk > disks {
			return req, fmt.Errorf("%w: %s: disk %d does not exist (disks are numbered 1 to %d)", ErrBadRequest, req.Action, req.Disk, disks)
		}
	case StartReconstruction:
		if req.Disk < 0 || req.Disk > disks {
			return req, fmt.Errorf("%w: %s: disk %d does not exist (0 for any spare, or 1 to %d)", ErrBadRequest, req.Action, req.Disk, disks)
		}
	case AddSpare, Force:
		if req.Disk != 0 {
			return req, fmt.Errorf("%w: %s takes no disk", ErrBadRequest, req.Action)
		}
	default:
		return req, fmt.Errorf("%w: unknown action %q (known: %v)", ErrBadRequest, req.Action, Actions)
	}
	return req, nil
}
