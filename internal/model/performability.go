package model

import (
	"math"
)

// Performability is the result of phase 2 (Nagaraja et al. 2002, §2.2 and §6.2). JSON
// keys are a contract.
type Performability struct {
	NormalThroughput    float64 `json:"normal_throughput"`
	IdealUnavailability float64 `json:"ideal_unavailability"`
	Denominator         string  `json:"denominator"`
	// AverageThroughput is AT = (1 − Σ_c W_c)·T_n + Σ_c Σ_s D_c^s/MTTF_c · T_c^s.
	AverageThroughput   float64 `json:"average_throughput"`
	AverageAvailability float64 `json:"average_availability"` // AT / T_n
	Unavailability      float64 `json:"unavailability"`       // 1 − AA: the average fraction of requests lost
	// Performability is AT × ideal_unavailability / unavailability: each
	// extra nine of availability multiplies it by 10. Null (NaN in Go) when
	// the unavailability is 0.
	Performability jsonFloat    `json:"performability"`
	Faults         []FaultShare `json:"faults"`
}

// FaultShare is one fault's part of the unavailability.
type FaultShare struct {
	Name string  `json:"name"`
	Rate float64 `json:"rate_per_s"`
	// Weight is W_c: the fraction of time the service spends in this fault's stages.
	Weight float64 `json:"weight"`
	// Unavailability is this fault's contribution: the faults' values sum to the total.
	Unavailability float64 `json:"unavailability"`
	// Share is Unavailability as a fraction of the total (0 when the total is 0).
	Share float64 `json:"share"`
	// Stages are the durations and throughputs actually used, after the
	// repair rules (until_repair, stages cut short by the MTTR).
	Stages []StageUsed `json:"stages"`
}

// StageUsed is a stage as the model used it.
type StageUsed struct {
	Stage      string  `json:"stage"`
	DurationS  float64 `json:"duration_s"`
	Throughput float64 `json:"throughput"`
}

// jsonFloat is written as null when it is NaN or infinite.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return []byte(formatFloat(v)), nil
}

// EffectiveStages applies Nagaraja et al.'s (2002) rules for the repair to fault f and
// returns the seven stage durations (seconds) and throughputs.
//
// Without an MTTR the stages are used as given. With one, the component is
// repaired MTTR after the fault: the pre-repair stages A, B, C are laid end
// to end and cut short at the repair (Nagaraja et al. 2002, §2.2: "if the assumed MTTR ...
// is less than the measured time for stages A and B, then we assume that B is
// cut short"; a stage still running at the repair ends there, and the ones
// after it do not happen), and a stage marked until_repair lasts until the
// repair. The post-repair stages D..G are kept as they are.
func EffectiveStages(f *Fault) [7]Stage {
	st := f.Stages
	if f.MTTR <= 0 {
		return st
	}
	elapsed := 0.0
	for i := 0; i < preRepair; i++ {
		left := math.Max(0, f.MTTR-elapsed)
		d := st[i].Duration
		if st[i].UntilRepair || d > left {
			d = left
		}
		st[i].Duration = d
		st[i].UntilRepair = false
		elapsed += d
	}
	return st
}

// Evaluate computes phase 2 for a fault load.
func Evaluate(fl *FaultLoad) *Performability {
	p := &Performability{
		NormalThroughput:    fl.NormalThroughput,
		IdealUnavailability: fl.IdealUnavailability,
		Denominator:         fl.Denominator,
		Faults:              []FaultShare{},
	}
	tn := fl.NormalThroughput
	totalWeight := 0.0
	lost := make([]float64, len(fl.Faults)) // requests/s lost, per unit of time
	for i := range fl.Faults {
		f := &fl.Faults[i]
		rate := fl.rate(f)
		share := FaultShare{Name: f.Name, Rate: rate}
		for s, st := range EffectiveStages(f) {
			share.Weight += st.Duration * rate
			lost[i] += st.Duration * rate * (tn - st.Throughput)
			if st.Duration > 0 {
				share.Stages = append(share.Stages, StageUsed{StageNames[s : s+1], st.Duration, st.Throughput})
			}
		}
		totalWeight += share.Weight
		p.Faults = append(p.Faults, share)
	}
	// Nagaraja et al. (2002) divide by MTTF (faults queue); the renewal variant divides
	// every fraction by 1+ΣW so that the fractions of time sum to 1.
	norm := 1.0
	if fl.Denominator == DenomMTTFPlusMTTR {
		norm = 1 / (1 + totalWeight)
	}
	lostTotal := 0.0
	for i := range p.Faults {
		p.Faults[i].Weight *= norm
		p.Faults[i].Unavailability = lost[i] * norm / tn
		lostTotal += lost[i] * norm
	}
	for i := range p.Faults {
		if lostTotal != 0 {
			p.Faults[i].Share = lost[i] * norm / lostTotal
		}
	}
	p.AverageThroughput = tn - lostTotal
	p.AverageAvailability = p.AverageThroughput / tn
	p.Unavailability = lostTotal / tn
	p.Performability = jsonFloat(math.NaN())
	if p.Unavailability > 0 {
		p.Performability = jsonFloat(p.AverageThroughput * fl.IdealUnavailability / p.Unavailability)
	}
	return p
}
