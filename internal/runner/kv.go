package runner

import (
	"os"
	"path/filepath"

	"github.com/faultbench/faultbench/internal/kvcheck"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload"
)

// kvConfig is the scenario's workload.kv as the generator takes it.
func kvConfig(k *scenario.KV) workload.KVConfig {
	if k == nil {
		return workload.KVConfig{}
	}
	return workload.KVConfig{API: k.API, Prefix: k.Prefix, Keys: k.Keys, Reads: k.Reads, ValueSize: k.ValueSize}
}

// openKVHistory gives a kv driver's workload its history file,
// DIR/kv-history.csv, which analysis replays through kvcheck. The run
// closes it (closeKVHistory) once the generator has returned.
func (r *run) openKVHistory(cfg *workload.Config) error {
	if cfg.Driver != "kv" {
		return nil
	}
	f, err := os.Create(filepath.Join(r.opt.OutDir, kvcheck.HistoryFile))
	if err != nil {
		return err
	}
	r.kvHistory = f
	cfg.KV.History = f
	return nil
}

// closeKVHistory closes the history file (a teardown step: run.kvClosed).
func (r *run) closeKVHistory() error {
	if r.kvHistory == nil {
		return nil
	}
	err := r.kvHistory.Close()
	r.kvHistory = nil
	return err
}
