package docker

import (
	"context"
	"strings"
	"testing"
)

func TestCleanupRemovesDeadRunsOnlyAndUnusedImages(t *testing.T) {
	f := newFake()
	f.images["faultbench-node:aaa"] = ImageInfo{ID: "sha256:aaa", Tags: []string{"faultbench-node:aaa"}}
	f.images["faultbench-node:bbb"] = ImageInfo{ID: "sha256:bbb", Tags: []string{"faultbench-node:bbb"}}
	for _, c := range []ContainerSpec{
		{Name: "fb-dead-n1-app", Image: "faultbench-node:aaa", Labels: map[string]string{LabelRun: "dead"}},
		{Name: "fb-live-n1-app", Image: "faultbench-node:bbb", Labels: map[string]string{LabelRun: "live"}},
	} {
		if _, err := f.ContainerCreate(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	f.networks["fb-dead"] = NetworkInfo{ID: "fb-dead", Name: "fb-dead", Labels: map[string]string{LabelRun: "dead"}}
	f.networks["fb-live"] = NetworkInfo{ID: "fb-live", Name: "fb-live", Labels: map[string]string{LabelRun: "live"}}
	removed, err := cleanup(context.Background(), imageListing{f}, func(run string) bool { return run == "live" })
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(removed, "\n")
	for _, want := range []string{"run dead: container fb-dead-n1-app", "run dead: network fb-dead", "image faultbench-node:aaa"} {
		if !strings.Contains(got, want) {
			t.Errorf("removed:\n%s\nmissing %q", got, want)
		}
	}
	if strings.Contains(got, "live") || strings.Contains(got, "bbb") {
		t.Errorf("removed a live run's object:\n%s", got)
	}
}

// imageListing lists the fake's images (the fake's ImageList is empty).
type imageListing struct{ *fakeEngine }

func (l imageListing) ImageList(context.Context, string) ([]ImageInfo, error) {
	var out []ImageInfo
	for _, im := range l.images {
		out = append(out, im)
	}
	return out, nil
}

func (l imageListing) ImageRemove(_ context.Context, ref string) error {
	for k, im := range l.images {
		if im.ID == ref {
			delete(l.images, k)
		}
	}
	return nil
}
