package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

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
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, record.SummaryFile), err)
	}
	return &s, nil
}
