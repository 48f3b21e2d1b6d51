package report

import (
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/analysis"
	"github.com/faultbench/faultbench/internal/provenance"
)

// The run table names the backend and each node's container and image
// when the record says; records that do not (older ones, other tools')
// get no such row.
func TestTheRunTableSaysWhatRanTheNodes(t *testing.T) {
	docker := &run{Label: "attached", Summary: &analysis.Summary{Provenance: &provenance.Info{Testbed: &provenance.Testbed{
		Backend: "docker", Detail: "(API 1.41), attached to compose project shop",
		Nodes: []provenance.TestbedNode{{Node: 1, Container: "shop_web_1", ContainerID: "0123456789abcdef", Image: "shop/web:1", ImageID: "sha256:feedfacecafe0000", RestartPolicy: "always"}}}}}}
	old := &run{Label: "old", Summary: &analysis.Summary{}}
	rows := runInfoTable([]*run{docker, old}).Rows
	last := rows[len(rows)-1]
	if last[0] != "testbed" || last[2] != "–" ||
		last[1] != "docker (API 1.41), attached to compose project shop; node 1: shop_web_1 (0123456789ab), image shop/web:1 (feedfacecafe), restart always" {
		t.Errorf("testbed row %q", last)
	}
	for _, row := range runInfoTable([]*run{old}).Rows {
		if strings.HasPrefix(row[0], "testbed") {
			t.Errorf("a record without a testbed got a row: %q", row)
		}
	}
}
