package docker

import (
	"context"
	"fmt"
	"strings"

	"github.com/faultbench/faultbench/internal/warden"
)

// Cleanup removes what docker runs left on the engine: containers and
// networks labelled with a run id whose journal is gone or whose
// controller is dead (a run in progress keeps its journal and a live
// controller), then faultbench images no container uses. It returns one
// line per removed object. No engine answering is not an error: there is
// nothing of ours to remove.
func Cleanup(ctx context.Context) ([]string, error) {
	eng, err := Connect(ctx)
	if err != nil {
		return nil, nil
	}
	return cleanup(ctx, eng, runAlive)
}

// runAlive reports whether run id's controller still runs.
func runAlive(run string) bool {
	recs, err := warden.Read(warden.Path(run))
	return err == nil && warden.ControllerAlive(recs)
}

func cleanup(ctx context.Context, eng Engine, alive func(run string) bool) ([]string, error) {
	var out []string
	var errs []string
	cs, err := eng.ContainerList(ctx, LabelRun)
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	inUse := map[string]bool{}
	for _, c := range cs {
		run := c.Labels[LabelRun]
		if alive(run) {
			inUse[c.Image] = true
			continue
		}
		if err := eng.ContainerRemove(ctx, c.ID); err != nil && !IsNotFound(err) {
			errs = append(errs, err.Error())
			inUse[c.Image] = true
			continue
		}
		out = append(out, fmt.Sprintf("run %s: container %s (%s)", run, c.Name, c.Status))
	}
	ns, err := eng.NetworkList(ctx, LabelRun)
	if err != nil {
		return out, fmt.Errorf("docker: list networks: %w", err)
	}
	for _, n := range ns {
		run := n.Labels[LabelRun]
		if alive(run) {
			continue
		}
		if err := eng.NetworkRemove(ctx, n.ID); err != nil && !IsNotFound(err) {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("run %s: network %s", run, n.Name))
	}
	imgs, err := eng.ImageList(ctx, LabelImage)
	if err != nil {
		return out, fmt.Errorf("docker: list images: %w", err)
	}
	for _, im := range imgs {
		if used(im, inUse) {
			continue
		}
		if err := eng.ImageRemove(ctx, im.ID); err != nil && !IsNotFound(err) {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("image %s %s", strings.Join(im.Tags, ","), shortID(strings.TrimPrefix(im.ID, "sha256:"))))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("docker: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

func used(im ImageInfo, inUse map[string]bool) bool {
	if inUse[im.ID] {
		return true
	}
	for _, t := range im.Tags {
		if inUse[t] {
			return true
		}
	}
	return false
}
