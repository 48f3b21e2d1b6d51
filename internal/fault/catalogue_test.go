package fault

import (
	"errors"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/scenario"
)

func TestValidate(t *testing.T) {
	cluster := scenario.ClusterSpec{System: "static", Nodes: 3}
	cases := []struct {
		fault   scenario.Fault
		key     string // "" = valid
		message string
	}{
		{scenario.Fault{Type: "app-crash", Node: scenario.NodeRef{N: 2}, At: sec(60), Duration: sec(90)}, "", ""},
		{scenario.Fault{Type: "node-freeze", Node: scenario.NodeRef{Any: true}, At: sec(1), Every: "gaussian(120s, 20s)"}, "", ""},
		{scenario.Fault{Type: "restart-all", At: sec(5)}, "", ""},
		{scenario.Fault{Type: "app-crash", Node: scenario.NodeRef{N: 4}, At: sec(1)}, "node", "no node 4"},
		{scenario.Fault{Type: "app-crash", At: sec(1)}, "node", "needs a target"},
		{scenario.Fault{Type: "app-crush", Node: scenario.NodeRef{N: 1}}, "type", "unknown fault type"},
		{scenario.Fault{Type: "link-down", Link: []int{1, 2}}, "type", "link-down cannot be injected by backend local into system static"},
		{scenario.Fault{Type: "app-hang", Node: scenario.NodeRef{N: 1}, Mode: "sticky", Duration: sec(3)}, "duration", "sticky"},
		{scenario.Fault{Type: "app-hang", Node: scenario.NodeRef{N: 1}, Mode: "forever"}, "mode", "transient or sticky"},
		{scenario.Fault{Type: "app-hang", Node: scenario.NodeRef{N: 1}, Every: "sometimes"}, "every", "poisson(MEAN)"},
		{scenario.Fault{Type: "app-hang", Node: scenario.NodeRef{N: 1}, At: sec(400)}, "at", "end of the run"},
		{scenario.Fault{Type: "restart-node", Node: scenario.NodeRef{N: 1}, Duration: sec(3)}, "duration", "instantaneous"},
	}
	for _, c := range cases {
		err := ValidateFault(7, c.fault, cluster, 300e9)
		if c.key == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.fault, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Key != c.key || fe.Index != 7 || !strings.Contains(err.Error(), c.message) {
			t.Errorf("%+v: got %v, want faults[7].%s: ...%s...", c.fault, err, c.key, c.message)
		}
	}
}

// The catalogue and the scenario loader's list of fault types must agree.
func TestCatalogueMatchesScenario(t *testing.T) {
	seen := map[string]bool{}
	for category, names := range scenario.FaultTypes {
		for _, n := range names {
			ft, ok := Lookup(n)
			if !ok {
				t.Errorf("scenario knows %s, the catalogue does not", n)
				continue
			}
			if ft.Category != category {
				t.Errorf("%s: category %s, scenario says %s", n, ft.Category, category)
			}
			seen[n] = true
		}
	}
	for _, ft := range Types {
		if !seen[ft.Name] {
			t.Errorf("the catalogue knows %s, the scenario does not", ft.Name)
		}
	}
}
