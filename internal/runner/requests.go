package runner

import (
	"errors"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload"
)

// RequestSpecs turns the scenario's workload.requests into the
// generator's form.
func RequestSpecs(w scenario.Workload) []workload.RequestSpec {
	var out []workload.RequestSpec
	for _, r := range w.Requests {
		s := workload.RequestSpec{Name: r.Name, Weight: r.Weight, Method: r.Method, Path: r.Path, Headers: r.Headers, Body: r.Body}
		if e := r.Expect; e != nil {
			s.Expect = workload.ExpectSpec{Status: e.Status, Headers: e.Headers, HeaderPresent: e.HeaderPresent,
				BodyContains: e.BodyContains, BodyRegex: e.BodyRegex, MaxLatency: e.MaxLatency.Duration}
			if len(e.JSON) > 0 {
				s.Expect.JSON = map[string]string{}
				for k, v := range e.JSON {
					s.Expect.JSON[k] = string(v)
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// TLSSpec is the scenario's workload.tls in the generator's form (nil: plain HTTP).
func TLSSpec(w scenario.Workload) *workload.TLSSpec {
	if w.TLS == nil {
		return nil
	}
	t := w.TLS
	return &workload.TLSSpec{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, Insecure: t.Insecure, ServerName: t.ServerName}
}

// CheckRequests parses every template, JSON path and regex of
// workload.requests and reads the TLS files, as the run will, and names
// the scenario's file:line and key for each problem.
func CheckRequests(sc *scenario.Scenario) error {
	var errs []error
	if len(sc.Workload.Requests) > 0 {
		if _, err := workload.CompileRequests(RequestSpecs(sc.Workload)); err != nil {
			for _, e := range unjoin(err) {
				var re *workload.RequestError
				if errors.As(e, &re) {
					path := append([]any{"workload", "requests", re.Index}, re.Key...)
					errs = append(errs, sc.Errorf(path, "%v", re.Err))
					continue
				}
				errs = append(errs, sc.Errorf([]any{"workload", "requests"}, "%v", e))
			}
		}
	}
	if spec := TLSSpec(sc.Workload); spec != nil {
		if _, err := workload.LoadTLS(*spec, sc.Dir()); err != nil {
			for _, e := range unjoin(err) {
				var te *workload.TLSError
				if errors.As(e, &te) {
					errs = append(errs, sc.Errorf([]any{"workload", "tls", te.Key}, "%v", te.Err))
					continue
				}
				errs = append(errs, sc.Errorf([]any{"workload", "tls"}, "%v", e))
			}
		}
	}
	return errors.Join(errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
