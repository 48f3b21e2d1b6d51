package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestResultsNameIsOnePathElement(t *testing.T) {
	for name, want := range map[string]string{
		"press-app-crash":   "press-app-crash",
		"../../../tmp/evil": "tmp-evil",
		"..":                "run",
		"":                  "run",
		".hidden":           "hidden",
		"a/b\\c d":          "a-b-c-d",
		"x..y":              "x.y",
		"ünïcode 1.0":       "n-code-1.0",
		"/etc/passwd":       "etc-passwd",
		"a\x00b\nc":         "a-b-c",
	} {
		got := resultsName(name)
		if got != want {
			t.Errorf("resultsName(%q) = %q, want %q", name, got, want)
		}
		if got == "." || got == ".." || strings.ContainsAny(got, "/\\\x00") || filepath.Base(got) != got {
			t.Errorf("resultsName(%q) = %q is not one safe path element", name, got)
		}
	}
	if n := len(resultsName(strings.Repeat("a", 5000))); n > 100 {
		t.Errorf("a long name stays %d characters long", n)
	}
}

// TestResultsStayInsideAndAreReadable runs a scenario named to escape
// results/: the run lands inside results/ under a sanitized name, every file
// is 0644 and every directory 0755, and a second run into the same -o is
// refused as bad input before anything starts.
func TestResultsStayInsideAndAreReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	old := syscall.Umask(0o022) // the modes checked below are what a usual umask leaves
	defer syscall.Umask(old)
	scen := writeScenario(t, strings.Replace(tiny, "name: tiny", "name: ../../../evil/x", 1))
	work := t.TempDir()
	t.Chdir(work)
	if stdout, stderr, code := run(t, "run", scen, "--quiet"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	ents, err := os.ReadDir(filepath.Join(work, "results"))
	if err != nil || len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "evil-x-") {
		t.Fatalf("results/ holds %v (%v), want one evil-x-<timestamp>", ents, err)
	}
	if top, _ := os.ReadDir(work); len(top) != 1 {
		t.Errorf("the run wrote beside results/: %v", top)
	}
	dir := filepath.Join(work, "results", ents[0].Name())
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o644)
		if d.IsDir() {
			want = 0o755
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	_, stderr, code := run(t, "run", scen, "--quiet", "-o", dir)
	if code != ExitBadInput || !strings.Contains(stderr, "already holds a run") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("-o onto a run: exit %d, stderr %q; want 2 and one line saying so", code, stderr)
	}
	_, stderr, code = run(t, "run", scen, "--quiet", "-o", filepath.Join(dir, "summary.json"))
	if code != ExitBadInput || !strings.Contains(stderr, "is a file") {
		t.Errorf("-o onto a file: exit %d, stderr %q; want 2 saying so", code, stderr)
	}
}
