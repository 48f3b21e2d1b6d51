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
