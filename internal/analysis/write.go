package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultbench/faultbench/internal/provenance"
	"github.com/faultbench/faultbench/internal/record"
)

// Write writes s to dir/summary.json, indented, through a temporary file
// renamed into place so a reader never sees half a summary.
func Write(dir string, s *Summary) error {
	b, err := Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".summary-*.json")
	if err != nil {
		return err
	}
	// os.CreateTemp makes the file 0600 (private temporary files): give
	// summary.json the mode of every other results file.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, record.SummaryFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Marshal encodes s as summary.json: indented JSON ending in a newline.
func Marshal(s *Summary) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the summary: %w", err)
	}
	return append(b, '\n'), nil
}

// Read reads dir/summary.json.
func Read(dir string) (*Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		return nil, err
	}
	s, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, record.SummaryFile), err)
	}
	return s, nil
}

// Decode parses summary.json of any schema and fills in what an older
// schema left out but can be derived: schema_version (1 when absent) and
// run.phases (from phase_order). Keys a schema did not have stay empty:
// provenance and definitions are null for schema 1.
func Decode(b []byte) (*Summary, error) {
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if s.SchemaVersion == 0 {
		s.SchemaVersion = provenance.LegacySchemaVersion
	}
	if s.Run.Phases == nil && s.PhaseOrder != nil {
		s.Run.Phases = append([]string(nil), s.PhaseOrder...)
	}
	return &s, nil
}
