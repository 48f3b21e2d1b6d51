#!/bin/sh
# Runs the RAID availability benchmarks of examples/raid-*.yaml one after the
# other at a time scale, then tabulates them (docs/raid.md):
#   bench/raid/run.sh [SCALE] [OUTDIR] [GLOB]   (default 0.2, /tmp/raid-runs, raid-*)
# FB names the faultbench binary (default: built into OUTDIR). A run whose
# summary.json exists is skipped, so an interrupted sweep resumes. The disk
# images of each run are removed afterwards (5 x 32 MiB a run).
set -eu
scale=${1:-0.2}
out=${2:-/tmp/raid-runs}
glob=${3:-raid-*}
mkdir -p "$out"
fb=${FB:-$out/faultbench}
[ -n "${FB:-}" ] || go build -o "$fb" ./cmd/faultbench
for f in examples/$glob.yaml; do
	name=$(basename "$f" .yaml)
	[ -e "$out/$name/summary.json" ] && continue
	rm -rf "${out:?}/$name"
	echo "== $name" >&2
	"$fb" run "$f" --time-scale "$scale" --quiet -o "$out/$name" || echo "   $name exited $?" >&2
	rm -f "$out/$name"/node-*/disk-*.img
done
python3 bench/raid/table.py "$out"
