#!/bin/sh
# The model checked against a run it never saw: for each mode, phase 2 from
# single-fault runs and the compressed fault load, compared with
# examples/press-MODE-accelerated.yaml.
#
#   bench/press/validate.sh [SCALE] [MODE...]      (default 0.1, all six modes)
#   SEEDS="1 2 3 4 5" bench/press/validate.sh 0.1 ha   # five repetitions, pooled
#
# Phase 1 is examples/validate/press-MODE-FAULT.yaml: one occurrence of each
# of the accelerated run's faults, as long as its occurrences (20 s) and
# under the same operator, alone on a quiet cluster (3 minutes a run at
# scale 1). PHASE1=nagaraja uses the Nagaraja et al. (2002) examples
# instead (bench/press/nagaraja.sh: 90-second faults, the operator at 90 s),
# whose recovery after a longer fault the model would carry over.
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
mkdir -p "$out"
[ -x "$fb" ] || go build -o "$fb" ./cmd/faultbench
for m in $modes; do
	if [ "${PHASE1:-matched}" = nagaraja ]; then
		FB=$fb bench/press/nagaraja.sh "$scale" "$out" "$m"
		single=$out/$m
	else
		single=$out/matched/$m
		FB=$fb bench/press/runs.sh examples/validate "$scale" "$single" "$m"
	fi
	runs=
	for seed in ${SEEDS:-1}; do
		run=$out/$m-accelerated
		[ "$seed" = 1 ] || run=$run-seed$seed
		[ -e "$run/summary.json" ] || "$fb" run "examples/press-$m-accelerated.yaml" --time-scale "$scale" --seed "$seed" --quiet -o "$run" || true
		runs="$runs $run"
	done
	"$fb" model fromruns "$single"/* --faultload examples/models/accelerated-faultload.yaml --time-scale "$scale" -o "$out/$m.accelerated.model.yaml"
	echo "== $m"
	"$fb" model validate "$out/$m.accelerated.model.yaml" $runs
done
