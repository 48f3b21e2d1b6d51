package raid

import (
	"reflect"
	"testing"

	"github.com/faultbench/faultbench/internal/fault"
)

func TestMaintenanceParams(t *testing.T) {
	for _, tc := range []struct {
		p    fault.Params
		raw  map[string]string
		ok   bool
		want fault.Params
	}{
		{NewReplaceDiskParams(), nil, true, &ReplaceDiskParams{}},
		{NewReplaceDiskParams(), map[string]string{"reinsert": "true"}, true, &ReplaceDiskParams{Reinsert: true}},
		{NewReplaceDiskParams(), map[string]string{"reinsert": "perhaps"}, false, nil},
		{NewReplaceDiskParams(), map[string]string{"force": "true"}, false, nil},
		{NewStartReconstructionParams(), map[string]string{"force": "1"}, true, &StartReconstructionParams{Force: true}},
		{NewStartReconstructionParams(), map[string]string{"reinsert": "true"}, false, nil},
	} {
		err := fault.DecodeParams(tc.p, tc.raw)
		if (err == nil) != tc.ok {
			t.Errorf("%T %v: %v, want ok %v", tc.p, tc.raw, err, tc.ok)
			continue
		}
		if tc.ok && !reflect.DeepEqual(tc.p, tc.want) {
			t.Errorf("%v: decoded %+v, want %+v", tc.raw, tc.p, tc.want)
		}
	}
}

// TestPolicySetOptions: policy_set sets the four knobs of the system it
// emulates, and a knob given beside it wins whatever the keys' order.
func TestPolicySetOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string // transient policy; reconstruction; double failure
	}{
		{map[string]string{"policy_set": "linux"}, "paranoid; auto, low; unrecoverable"},
		{map[string]string{"policy_set": "solaris"}, "tolerant; auto, high; keep-serving"},
		{map[string]string{"policy_set": "windows2000"}, "strict-writes; manual, adaptive; recoverable"},
		{map[string]string{"policy_set": "windows2000", "reconstruction_auto": "true", "double_failure": "keep-serving"}, "strict-writes; auto, adaptive; keep-serving"},
		{map[string]string{"policy_set": "linux", "transient_policy": "tolerant", "reconstruction": "high"}, "tolerant; auto, high; unrecoverable"},
		{map[string]string{}, "threshold(3, 10m0s); auto, adaptive; recoverable"},
	} {
		s, err := ParseSettings(testNodeConfig(t, tc.opts))
		if err != nil {
			t.Fatalf("%v: %v", tc.opts, err)
		}
		got := s.Array.Policy.String() + "; " + s.Array.Recon.String() + "; " + s.Array.DoubleFailure.String()
		if got != tc.want {
			t.Errorf("%v: %s, want %s", tc.opts, got, tc.want)
		}
	}
}
