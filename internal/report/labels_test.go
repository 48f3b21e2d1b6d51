package report

import (
	"image/color"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/faultbench/faultbench/internal/record"
)

// TestLabelRowsNeverOverlap places the labels of an operator's busy
// minute — several at one instant, some near the right edge, some out of
// time order — and checks that no two share space and none leaves the area.
func TestLabelRowsNeverOverlap(t *testing.T) {
	c := draw.New(vgimg.New(4*vg.Inch, 2*vg.Inch))
	phases := newLabelRows(c, 9, 0)
	for _, x := range []vg.Length{3, 40, 45} { // phases close together need two rows
		phases.place(c, x, "recovery", color.Black)
	}
	labels := phases.below(8)
	xs := []vg.Length{200, 200, 200, 280, 285, 150, 10, 287, 100}
	for i, x := range xs {
		labels.place(c, x, []string{"detect n3", "restart-failed n3", "done n3", "clear app-crash n3", "app-hang n2", "x", "app-crash n1", "done n2", "detect n1"}[i], color.Black)
	}
	if labels.top > phases.top-vg.Length(len(phases.spans))*phases.rowH+1e-6 {
		t.Fatalf("event rows start at %v, inside the %d phase rows from %v", labels.top, len(phases.spans), phases.top)
	}
	for _, l := range []*labelRows{phases, labels} {
		for r, row := range l.spans {
			for i, a := range row {
				if a[0] < c.Min.X || a[1] > c.Max.X {
					t.Errorf("row %d label %d [%v, %v] leaves the area [%v, %v]", r, i, a[0], a[1], c.Min.X, c.Max.X)
				}
				for _, b := range row[i+1:] {
					if a[0] < b[1] && b[0] < a[1] {
						t.Errorf("row %d: labels [%v, %v] and [%v, %v] overlap", r, a[0], a[1], b[0], b[1])
					}
				}
			}
		}
	}
}

func TestOperatorLabel(t *testing.T) {
	for _, c := range []struct {
		verb string
		e    record.Event
		want string
	}{
		{"detect", record.Event{Node: 3, Detail: "noticed app-crash 11s after injection"}, "detect n3"},
		{"", record.Event{Node: 3, Detail: "restart-failed begins on node 3"}, "restart-failed n3"},
		{"", record.Event{Node: 3, Detail: "restart-failed done on node 3"}, "done n3"},
		{"", record.Event{Detail: "restart-all begins on node 1,2,3,4"}, "restart-all"},
		{"", record.Event{Node: 2, Detail: ""}, "action n2"},
	} {
		if got := operatorLabel(c.verb, c.e); got != c.want {
			t.Errorf("operatorLabel(%q, %q) = %q, want %q", c.verb, c.e.Detail, got, c.want)
		}
	}
}
