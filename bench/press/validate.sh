#!/bin/sh
# The model checked against a run it never saw: for each mode, phase 2 from
# the single-fault runs (bench/press/nagaraja.sh, same SCALE and OUTDIR) and
# the compressed fault load, compared with examples/press-MODE-accelerated.yaml.
#
#   bench/press/validate.sh [SCALE] [MODE...]      (default 0.1, all six modes)
#   SEEDS="1 2 3 4 5" bench/press/validate.sh 0.1 ha   # five repetitions, pooled
#
# OUTDIR is $OUT or /tmp/press-nagaraja; FB names the faultbench binary.
# SEEDS (default 1, the scenario's own) runs the accelerated run once per
# seed; `model validate` pools the repetitions.
set -eu
scale=${1:-0.1}
[ $# -ge 1 ] && shift
modes=${*:-"perf ha robust via0 via3 via5"}
out=${OUT:-/tmp/press-nagaraja}
fb=${FB:-$out/faultbench}
[ -x "$fb" ] || go build -o "$fb" ./cmd/faultbench
for m in $modes; do
	FB=$fb bench/press/nagaraja.sh "$scale" "$out" "$m"
	runs=
	for seed in ${SEEDS:-1}; do
		run=$out/$m-accelerated
		[ "$seed" = 1 ] || run=$run-seed$seed
		[ -e "$run/summary.json" ] || "$fb" run "examples/press-$m-accelerated.yaml" --time-scale "$scale" --seed "$seed" --quiet -o "$run" || true
		runs="$runs $run"
	done
	"$fb" model fromruns "$out/$m"/* --faultload examples/models/accelerated-faultload.yaml --time-scale "$scale" -o "$out/$m.accelerated.model.yaml"
	echo "== $m"
	"$fb" model validate "$out/$m.accelerated.model.yaml" $runs
done
