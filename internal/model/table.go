package model

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// The human-readable forms of the results. Every command also has --json,
// whose keys are the contract; these tables are for people and may change.

// WriteTable prints phase 2's result.
func (p *Performability) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "normal throughput\t%.6g req/s\n", p.NormalThroughput)
	fmt.Fprintf(tw, "average throughput\t%.6g req/s\n", p.AverageThroughput)
	fmt.Fprintf(tw, "average availability\t%.6f%%\t(%.2f nines)\n", 100*p.AverageAvailability, nines(p.Unavailability))
	fmt.Fprintf(tw, "unavailability\t%.4g\t(as much as %s of full outage a year)\n", p.Unavailability, yearShare(p.Unavailability))
	fmt.Fprintf(tw, "performability\t%s\t(ideal unavailability %.3g, denominator %s)\n", fmtJSONFloat(p.Performability), p.IdealUnavailability, p.Denominator)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "fault\tMTTF\tweight\tunavailability\tshare\tstages (duration@throughput)")
	for _, f := range p.Faults {
		var st []string
		for _, s := range f.Stages {
			st = append(st, fmt.Sprintf("%s %s@%.4g", s.Stage, fmtSeconds(s.DurationS), s.Throughput))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3g\t%.3g\t%.1f%%\t%s\n", f.Name, fmtSeconds(1/f.Rate), f.Weight, f.Unavailability, 100*f.Share, strings.Join(st, " "))
	}
	return tw.Flush()
}

// WriteTable prints a sweep, one row per design and rate.
func (s *SweepResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "design\t%s rate\tMTTF\taverage throughput\tunavailability\tnines\tperformability\tlargest contributor\n", s.Scale)
	for _, p := range s.Points {
		r := p.Performance
		top, topU := "-", 0.0
		for _, f := range r.Faults {
			if f.Unavailability > topU {
				top, topU = f.Name, f.Unavailability
			}
		}
		if r.Unavailability > 0 && top != "-" {
			top = fmt.Sprintf("%s (%.0f%%)", top, 100*topU/r.Unavailability)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.6g\t%.4g\t%.2f\t%s\t%s\n", p.Design, p.Label, fmtSeconds(p.MTTFS), r.AverageThroughput, r.Unavailability, nines(r.Unavailability), fmtJSONFloat(r.Performability), top)
	}
	return tw.Flush()
}

// WriteTable prints a cross-over.
func (c *Crossover) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "performability of %s\t%.6g\n", c.A, c.PerformabilityA)
	fmt.Fprintf(tw, "performability of %s\t%.6g\n", c.B, c.PerformabilityB)
	if math.IsNaN(float64(c.Factor)) {
		fmt.Fprintf(tw, "cross-over\tnone: %s\n", c.Note)
	} else {
		fmt.Fprintf(tw, "cross-over factor\t%.4g\t(%s's %s would have to occur %.3g times as often for equal performability)\n",
			float64(c.Factor), c.B, strings.Join(c.Scaled, ", "), float64(c.Factor))
	}
	return tw.Flush()
}

// WriteTable prints a chain's solution.
func (r *CTMCResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "states\t%d\n", len(r.States))
	fmt.Fprintf(tw, "irreducible\t%v\n", r.Irreducible)
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	if r.MeanTimeToAbsorption != nil {
		fmt.Fprintf(tw, "mean time to absorption\t%s\n", fmtJSONFloat(*r.MeanTimeToAbsorption))
	}
	if r.SteadyStateReward != nil {
		fmt.Fprintf(tw, "steady-state reward\t%.10g\n", *r.SteadyStateReward)
	}
	if r.SteadyState != nil {
		fmt.Fprintln(tw, "\nstate\tsteady-state probability")
		for _, s := range topStates(r.States, r.SteadyState, 20) {
			fmt.Fprintf(tw, "%s\t%.6g\n", s, r.SteadyState[s])
		}
	}
	for _, p := range r.Transient {
		fmt.Fprintf(tw, "\nt = %g", p.T)
		if p.Reward != nil {
			fmt.Fprintf(tw, "\treward %.6g\taccumulated %.6g", *p.Reward, *p.AccumulatedReward)
		}
		fmt.Fprintln(tw)
		for _, s := range topStates(r.States, p.Probabilities, 10) {
			fmt.Fprintf(tw, "  %s\t%.6g\n", s, p.Probabilities[s])
		}
	}
	return tw.Flush()
}

// WriteTable prints a k-of-n result; unit names the time unit.
func (r *KofNResult) WriteTable(w io.Writer, unit string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	repair := "per-unit repair"
	if r.SharedRepair {
		repair = "shared repair"
	}
	fmt.Fprintf(tw, "system\t%d-of-%d, %s\n", r.K, r.N, repair)
	fmt.Fprintf(tw, "MTTF (all up → down)\t%s %s\n", fmtJSONFloat(r.MTTF), unit)
	if r.ClosedFormMTTF != nil {
		fmt.Fprintf(tw, "closed form\t%.8g %s\n", *r.ClosedFormMTTF, unit)
	}
	fmt.Fprintf(tw, "availability\t%.10g\t(%.2f nines)\n", r.Availability, nines(1-r.Availability))
	fmt.Fprintf(tw, "steady-state reward\t%.6g\n", r.SteadyStateReward)
	return tw.Flush()
}

// WriteTable prints a session-loss result.
func (s *SessionLoss) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "WQ\t%d\n", s.WQ)
	fmt.Fprintf(tw, "rho (brick MTTF / mean time between writes)\t%.6g\n", s.Rho)
	fmt.Fprintf(tw, "p_loss\t%.6g\t(%.2f nines)\n", s.PLoss, float64(s.Nines))
	fmt.Fprintf(tw, "p_noloss\t%.10g\n", s.PNoLoss)
	return tw.Flush()
}

func topStates(states []string, p map[string]float64, k int) []string {
	out := append([]string(nil), states...)
	sort.SliceStable(out, func(i, j int) bool { return p[out[i]] > p[out[j]] })
	if len(out) > k {
		out = out[:k]
	}
	return out
}

func nines(unavailability float64) float64 {
	if unavailability <= 0 {
		return math.Inf(1)
	}
	return -math.Log10(unavailability)
}

func yearShare(u float64) string {
	return fmtSeconds(u * 365.25 * 86400)
}

func fmtJSONFloat(f jsonFloat) string {
	if math.IsInf(float64(f), 1) {
		return "∞"
	}
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return "undefined"
	}
	return fmt.Sprintf("%.6g", float64(f))
}

// fmtSeconds writes a duration in the largest unit that keeps it ≥ 1.
func fmtSeconds(s float64) string {
	switch {
	case math.IsInf(s, 0) || math.IsNaN(s):
		return "∞"
	case s >= 365.25*86400:
		return fmt.Sprintf("%.3gy", s/(365.25*86400))
	case s >= 86400:
		return fmt.Sprintf("%.3gd", s/86400)
	case s >= 3600:
		return fmt.Sprintf("%.3gh", s/3600)
	case s >= 60:
		return fmt.Sprintf("%.3gm", s/60)
	default:
		return fmt.Sprintf("%.3gs", s)
	}
}
