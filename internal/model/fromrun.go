package model

import (
	"encoding/json"
	"fmt"
	"math"
)

// runSummary is the part of summary.json (docs/results.md, analysis.Summary) that
// phase 2 needs. It is decoded locally, with the same JSON keys, so that the
// model does not depend on the analysis package's build.
type runSummary struct {
	Faults []struct {
		Type   string `json:"type"`
		Stages map[string]struct {
			DurationS  float64  `json:"duration_s"`
			Throughput *float64 `json:"throughput"` // null when the stage has no samples
			Measured   bool     `json:"measured"`
		} `json:"stages"`
	} `json:"faults"`
}

// runStages returns the stages of fault index of a run's summary.json; a
// stage missing from the summary is nil, a null throughput is NaN.
func runStages(read func(string) ([]byte, error), dir string, index int) ([7]*Stage, error) {
	var out [7]*Stage
	data, err := read(dir)
	if err != nil {
		return out, fmt.Errorf("reading the run's summary.json: %w", err)
	}
	var s runSummary
	if err := json.Unmarshal(data, &s); err != nil {
		return out, fmt.Errorf("%s/summary.json: %v", dir, err)
	}
	if index >= len(s.Faults) {
		return out, fmt.Errorf("%s/summary.json has %d faults, no fault %d (run_fault counts from 0)", dir, len(s.Faults), index)
	}
	for name, st := range s.Faults[index].Stages {
		i := -1
		for j := range StageNames {
			if name == StageNames[j:j+1] {
				i = j
			}
		}
		if i < 0 {
			return out, fmt.Errorf("%s/summary.json: unknown stage %q (stages are A..G)", dir, name)
		}
		if st.DurationS < 0 || math.IsNaN(st.DurationS) {
			return out, fmt.Errorf("%s/summary.json: stage %s has duration %v", dir, name, st.DurationS)
		}
		tp := math.NaN()
		if st.Throughput != nil {
			tp = *st.Throughput
		}
		out[i] = &Stage{Duration: st.DurationS, Throughput: tp}
	}
	return out, nil
}
