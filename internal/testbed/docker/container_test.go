package docker

import (
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/testbed"
)

// system container's own rules live in its descriptor (checkContainer),
// not in the scenario package: the image and the port are needed, and the
// backend must be docker; every error names file:line and key.
func TestCheckContainer(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		want    []string
	}{
		{`{system: container, backend: docker, nodes: 1, image: web, port: 80}`, nil},
		{`{system: container, backend: docker, nodes: 1}`, []string{
			"c.yaml:1: cluster: system: container needs image:",
			"c.yaml:1: cluster.port: system: container needs the port"}},
		{`{system: container, nodes: 1, image: web, port: 80}`, []string{
			"c.yaml:1: cluster.backend: system: container runs only on backend: docker (this is backend: local)"}},
	} {
		sc, err := scenario.Parse([]byte("cluster: "+tc.cluster+"\nworkload: {rate: 1, trace: \"zipf:1:1.0\"}\nphases: [{name: a, duration: 10s}]\n"), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		err = checkContainer(sc, testbed.Plan{})
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.cluster, err)
			}
			continue
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v\nwant %s", tc.cluster, err, w)
			}
		}
	}
}
