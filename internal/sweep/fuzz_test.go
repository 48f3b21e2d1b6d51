package sweep

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary sweep files to Load: it must return a sweep or
// an error, never panic, and a sweep it returns must expand into runs.
func FuzzLoad(f *testing.F) {
	f.Add(gridSweep)
	f.Add("scenario: base.yaml\ngrid:\n  phases.0.duration: [1s, 2s]\n  cluster.options.x: [{a: 1}]\n")
	f.Add("scenario: {name: x}\ngrid: [1]\n")
	f.Add("scenario: base.yaml\ngrid:\n  workload: [1]\nexclude: [[1]]\n")
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(baseScenarioYAML), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(p, LoadOptions{})
		if err != nil {
			return
		}
		if _, err := s.Runs(); err != nil {
			t.Fatalf("a loaded sweep does not expand: %v", err)
		}
	})
}
