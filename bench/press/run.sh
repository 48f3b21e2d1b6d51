#!/bin/sh
# Runs every PRESS experiment of examples/press-*.yaml at a time scale and
# tabulates fault vs failure duration and behaviour class (docs/press.md).
#   bench/press/run.sh [SCALE] [OUTDIR]     (default 0.2, /tmp/press-results)
# FB names the faultbench binary (default: built into OUTDIR).
set -eu
scale=${1:-0.2}
out=${2:-/tmp/press-results}
mkdir -p "$out"
fb=${FB:-$out/faultbench}
[ -n "${FB:-}" ] || go build -o "$fb" ./cmd/faultbench
for f in examples/press-*.yaml; do
	name=$(basename "$f" .yaml)
	[ -e "$out/$name/summary.json" ] && continue
	rm -rf "${out:?}/$name"
	echo "== $name" >&2
	"$fb" run "$f" --time-scale "$scale" --quiet -o "$out/$name" || echo "   $name exited $?" >&2
done
python3 bench/press/table.py "$out"/press-*/
