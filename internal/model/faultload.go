package model

import "strings"

// StageNames are the seven stages of Nagaraja et al.'s (2002) piece-wise linear model
// (Fig. 1): A detection, B reconfiguration, C degraded until repair,
// D transient after repair, E stable after repair, F operator reset,
// G transient after reset. A, B and C happen while the fault is present.
const StageNames = "ABCDEFG"

// preRepair is the number of stages (A, B, C) that the repair can cut short.
const preRepair = 3

// Stage is one stage of a fault's response.
type Stage struct {
	Duration    float64 // seconds; ignored when UntilRepair
	UntilRepair bool    // the stage ends when the component is repaired (MTTR)
	Throughput  float64 // mean requests/s during the stage
}

// Fault is one fault of a fault load.
type Fault struct {
	Name  string
	Rate  float64 // arrivals per second (1/MTTF); for a grouped fault, Share × the group's rate
	MTTR  float64 // seconds; 0 when not given
	Group string  // optional: the group whose rate this fault takes a share of
	Share float64 // fraction of the group's rate (Nagaraja et al. 2002, §6.1's application-fault split)
	// Stages are indexed A=0 .. G=6; stages that do not occur have zero duration.
	Stages [7]Stage
	// FromRun is the results directory the stages came from, if any.
	FromRun string
}

// Denominator choices for a fault's fraction of time (Nagaraja et al. 2002, §2.2).
const (
	// DenomMTTF is Nagaraja et al.'s (2002) choice: faults queue (memoryless arrivals keep
	// coming while a fault is active), so fault c holds the service for
	// D_c/MTTF_c of the time.
	DenomMTTF = "mttf"
	// DenomMTTFPlusMTTR is the alternating renewal choice: no fault arrives
	// while another is active, so fault c holds it for W_c/(1+Σ W), which is
	// D/(MTTF+D) for one fault. It equals the steady state of the CTMC bridge.
	DenomMTTFPlusMTTR = "mttf+mttr"
)

// FaultLoad is the input of phase 2 (Nagaraja et al. 2002, §2.2): normal throughput,
// and for each fault its rate and the stages it goes through.
type FaultLoad struct {
	NormalThroughput    float64            // T_n, requests/s
	IdealUnavailability float64            // the ideal system's unavailability (default 1e-5, five nines)
	Denominator         string             // DenomMTTF (default) or DenomMTTFPlusMTTR
	Groups              map[string]float64 // group name → rate per second shared by its faults
	Faults              []Fault
}

// Clone returns a deep copy, so sweeps can change rates.
func (fl *FaultLoad) Clone() *FaultLoad {
	c := *fl
	c.Faults = append([]Fault(nil), fl.Faults...)
	c.Groups = make(map[string]float64, len(fl.Groups))
	for k, v := range fl.Groups {
		c.Groups[k] = v
	}
	return &c
}

// rate is fault f's arrival rate per second.
func (fl *FaultLoad) rate(f *Fault) float64 {
	if f.Group != "" {
		return f.Share * fl.Groups[f.Group]
	}
	return f.Rate
}

// SetRate sets the rate (per second) of the fault or group called name.
func (fl *FaultLoad) SetRate(name string, rate float64) error {
	if _, ok := fl.Groups[name]; ok {
		fl.Groups[name] = rate
		return nil
	}
	for i := range fl.Faults {
		if fl.Faults[i].Name == name {
			if fl.Faults[i].Group != "" {
				// Scaling one member alone: detach it from its group.
				fl.Faults[i].Group = ""
			}
			fl.Faults[i].Rate = rate
			return nil
		}
	}
	return badInput("no fault or group named %q in the fault load (have: %s)", name, strings.Join(fl.names(), ", "))
}

// Rate returns the rate per second of the fault or group called name.
func (fl *FaultLoad) Rate(name string) (float64, error) {
	if r, ok := fl.Groups[name]; ok {
		return r, nil
	}
	for i := range fl.Faults {
		if fl.Faults[i].Name == name {
			return fl.rate(&fl.Faults[i]), nil
		}
	}
	return 0, badInput("no fault or group named %q in the fault load (have: %s)", name, strings.Join(fl.names(), ", "))
}

// Scale multiplies the rates of the named faults or groups by factor.
func (fl *FaultLoad) Scale(names []string, factor float64) error {
	for _, n := range names {
		r, err := fl.Rate(n)
		if err != nil {
			return err
		}
		if err := fl.SetRate(n, r*factor); err != nil {
			return err
		}
	}
	return nil
}

func (fl *FaultLoad) names() []string {
	var out []string
	for g := range fl.Groups {
		out = append(out, g)
	}
	for _, f := range fl.Faults {
		out = append(out, f.Name)
	}
	return out
}
