package provenance

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestCollectWriteRead(t *testing.T) {
	start := time.Date(2026, 11, 23, 19, 45, 1, 250_000_000, time.FixedZone("CET", 3600))
	info := Collect("0123456789abcdef", start, []string{"faultbench", "run", "x.yaml", "--time-scale", "0.1"})
	if info.SchemaVersion != SchemaVersion || info.RunID != "0123456789abcdef" {
		t.Fatalf("schema/run id: %+v", info)
	}
	if info.StartedUTC != "2026-11-23T18:45:01.25Z" {
		t.Fatalf("started_utc = %q, want the instant in UTC", info.StartedUTC)
	}
	if info.Cores < 1 || info.GoVersion == "" || info.FaultbenchVersion == "" {
		t.Fatalf("machine/build fields missing: %+v", info)
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil && len(info.LoadAvgStart) != 3 {
		t.Fatalf("loadavg_start = %v, want three numbers on Linux", info.LoadAvgStart)
	}
	dir := t.TempDir()
	if err := Write(dir, info); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, File))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("provenance.json mode: %v %v", fi, err)
	}
	got, err := Read(dir)
	if err != nil || !reflect.DeepEqual(*got, info) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, info)
	}
}

func TestReadAbsentAndBad(t *testing.T) {
	dir := t.TempDir()
	if got, err := Read(dir); got != nil || err != nil {
		t.Fatalf("absent file: %v %v, want nil, nil (schema 1)", got, err)
	}
	os.WriteFile(filepath.Join(dir, File), []byte(`{"schema_version": 0}`), 0o644)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "schema_version 0") {
		t.Fatalf("version 0 accepted: %v", err)
	}
	os.WriteFile(filepath.Join(dir, File), []byte(`{`), 0o644)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), File) {
		t.Fatalf("truncated file: %v, want an error naming the file", err)
	}
}

func TestMeta(t *testing.T) {
	info := Info{SchemaVersion: 2, FaultbenchVersion: "(devel)", Commit: "abc", RunID: "r1", StartedUTC: "2026-11-23T18:45:01Z",
		Host: "h", Cores: 2, LoadAvgStart: []float64{0.5, 1, 1.5}, CommandLine: []string{"faultbench", "run"}}
	m := info.Meta()
	want := map[string]string{
		"faultbench.schema_version": "2", "faultbench.faultbench_version": "(devel)", "faultbench.commit": "abc",
		"faultbench.commit_modified": "false", "faultbench.go_version": "", "faultbench.run_id": "r1",
		"faultbench.started_utc": "2026-11-23T18:45:01Z", "faultbench.host": "h", "faultbench.cores": "2",
		"faultbench.loadavg_start": "[0.5,1,1.5]", "faultbench.command_line": `["faultbench","run"]`,
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Meta() = %v\nwant %v", m, want)
	}
}

func TestBuildVersion(t *testing.T) {
	v, c, mod := buildVersion(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "963d97c"}, {Key: "vcs.modified", Value: "true"}}}, true
	})
	if v != "v0.3.0" || c != "963d97c" || !mod {
		t.Fatalf("got %q %q %v", v, c, mod)
	}
	if v, c, _ := buildVersion(func() (*debug.BuildInfo, bool) { return nil, false }); v != "unknown" || c != "" {
		t.Fatalf("no build info: %q %q", v, c)
	}
}

func TestParseLoadAvg(t *testing.T) {
	got, err := parseLoadAvg("0.52 0.58 0.59 1/467 12345\n")
	if err != nil || !reflect.DeepEqual(got, []float64{0.52, 0.58, 0.59}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "a b c"} {
		if _, err := parseLoadAvg(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
