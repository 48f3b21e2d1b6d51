package provenance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/placement"
)

// SchemaVersion is the version of the results contract this faultbench
// writes and the metric definitions it computes (docs/metrics.md, "Schema
// versions", lists what each version changed).
//
//	1: results before provenance (no provenance.json; summary.json without
//	   schema_version, phases in run order only as phase_order).
//	2: provenance.json and summary.json "provenance"; summary.json
//	   "schema_version", "definitions" and run.phases as a list in run order;
//	   the same fields as Parquet key/value metadata.
//	3: an open-loop run's windows are judged by goodput × the baseline's
//	   offered rate, not throughput (summary.json definitions.judge,
//	   baseline.judge and baseline.offered_per_s).
const SchemaVersion = 3

// LegacySchemaVersion is the schema of results that carry no version.
const LegacySchemaVersion = 1

// File is the results directory's provenance file.
const File = "provenance.json"

// Info is what made a results directory. Key names are part of the results
// contract: add, never rename.
type Info struct {
	SchemaVersion     int    `json:"schema_version"`
	FaultbenchVersion string `json:"faultbench_version"` // module version, "(devel)" for a build from a checkout
	Commit            string `json:"commit"`             // VCS revision of the build, "" when the build did not record one
	Modified          bool   `json:"commit_modified"`    // the build's work tree had uncommitted changes
	GoVersion         string `json:"go_version"`
	RunID             string `json:"run_id"`
	// StartedUTC is the wall-clock instant (RFC 3339, UTC, nanoseconds) at
	// which the run clock — every t_s and t_start_s — read 0: add a t_s to
	// it to line a record up with the service's own monitoring.
	StartedUTC string `json:"started_utc"`
	Host       string `json:"host"`
	Cores      int    `json:"cores"`
	// LoadAvgStart is the 1, 5 and 15 minute load average at the start;
	// null where the system does not report one.
	LoadAvgStart []float64 `json:"loadavg_start"`
	CommandLine  []string  `json:"command_line"`
	// Placement is where the run's nodes and controller ran: the CPUs they
	// were pinned to (cluster.cpus, workload.cpus) and by what mechanism.
	// Absent in results written before it was recorded.
	Placement *placement.Record `json:"placement,omitempty"`

	// Testbed is what ran the nodes, when the backend says (docker: the
	// engine, images and containers); absent for the local backend.
	Testbed *Testbed `json:"testbed,omitempty"`
}

// Testbed is what ran a run's nodes. Key names are part of the results
// contract: add, never rename.
type Testbed struct {
	Backend string        `json:"backend"`          // cluster.backend: docker, netns, local
	Detail  string        `json:"detail,omitempty"` // e.g. "API 1.41, network fb-RUN 10.214.7.0/24" or "attached to compose project shop"
	Nodes   []TestbedNode `json:"nodes,omitempty"`
}

// TestbedNode is one node's container, where there is one.
type TestbedNode struct {
	Node          int    `json:"node"`
	Addr          string `json:"addr,omitempty"`      // where clients reach it
	Container     string `json:"container,omitempty"` // name
	ContainerID   string `json:"container_id,omitempty"`
	Image         string `json:"image,omitempty"`
	ImageID       string `json:"image_id,omitempty"`
	RestartPolicy string `json:"restart_policy,omitempty"` // the engine's: no, always, unless-stopped, on-failure
}

// Collect gathers the provenance of a run whose clock started at start.
// runID names the run (the runner draws it, runner.NewRunID); args is the command line,
// program name first. It never fails: what the machine does not say is
// left empty.
func Collect(runID string, start time.Time, args []string) Info {
	info := Info{
		SchemaVersion: SchemaVersion,
		RunID:         runID,
		StartedUTC:    start.UTC().Format(time.RFC3339Nano),
		Cores:         runtime.NumCPU(),
		GoVersion:     runtime.Version(),
		CommandLine:   append([]string(nil), args...),
	}
	info.Host, _ = os.Hostname()
	info.FaultbenchVersion, info.Commit, info.Modified = buildVersion(debug.ReadBuildInfo)
	if info.Commit == "" {
		info.Commit = stampedCommit
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		info.LoadAvgStart, _ = parseLoadAvg(string(b))
	}
	return info
}

// stampedCommit is the commit given at link time, for builds without VCS
// stamping (GOFLAGS=-buildvcs=false, a copied source tree):
//
//	go build -ldflags "-X github.com/faultbench/faultbench/internal/provenance.stampedCommit=$(git rev-parse HEAD)" ./cmd/faultbench
var stampedCommit string

// buildVersion reads the module version and VCS stamp of the binary.
func buildVersion(read func() (*debug.BuildInfo, bool)) (version, commit string, modified bool) {
	bi, ok := read()
	if !ok {
		return "unknown", "", false
	}
	version = bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return version, commit, modified
}

// parseLoadAvg reads the first three fields of /proc/loadavg.
func parseLoadAvg(s string) ([]float64, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil, fmt.Errorf("loadavg %q: want three numbers", s)
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, fmt.Errorf("loadavg %q: %w", s, err)
		}
		out[i] = v
	}
	return out, nil
}

// MetaPrefix starts every key Meta returns.
const MetaPrefix = "faultbench."

// Meta returns the provenance as key/value pairs for a file's metadata
// (the Parquet footer): every key of Info prefixed with MetaPrefix, each
// value a string (lists and numbers in JSON). The caller owns the map.
func (i Info) Meta() map[string]string {
	b, _ := json.Marshal(i) // Info holds only marshalable fields
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields)
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		var s string
		if json.Unmarshal(v, &s) == nil {
			m[MetaPrefix+k] = s
		} else {
			m[MetaPrefix+k] = string(v)
		}
	}
	return m
}

// Write stores i as dir/provenance.json (mode 0644), through a temporary
// file renamed into place so a reader never sees half of it.
func Write(dir string, i Info) error {
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".provenance-*.json")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, File))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, File), err)
	}
	return nil
}

// Read reads dir/provenance.json. It returns (nil, nil) when the file is
// absent: results of schema 1, or of another tool.
func Read(dir string) (*Info, error) {
	path := filepath.Join(dir, File)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var i Info
	if err := json.Unmarshal(b, &i); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to analyse the run as one of unknown provenance)", path, err)
	}
	if i.SchemaVersion < LegacySchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is not a version (want %d..%d)", path, i.SchemaVersion, LegacySchemaVersion, SchemaVersion)
	}
	return &i, nil
}
