#!/bin/sh
# Phase 1 of Nagaraja et al. (2002), measured: runs their fault table
# (Table 3's types, examples/press-MODE-FAULT.yaml, written by
# bench/press/examples.py) for each mode, then turns each mode's runs into a
# phase-2 input with `faultbench model fromruns`.
#
#   bench/press/nagaraja.sh [SCALE] [OUTDIR] [MODE...]
#
# SCALE defaults to 0.1 (27 s a run), OUTDIR to /tmp/press-nagaraja, MODE to
# all six. A run already in OUTDIR is kept. FB names the faultbench binary
# (default: built into OUTDIR). The fault load is
# examples/models/nagaraja-faultload.yaml; each mode's model input is
# OUTDIR/MODE.model.yaml.
set -eu
scale=${1:-0.1}
out=${2:-/tmp/press-nagaraja}
[ $# -ge 2 ] && shift 2 || shift $#
modes=${*:-"perf ha robust via0 via3 via5"}
mkdir -p "$out"
fb=${FB:-$out/faultbench}
[ -n "${FB:-}" ] || go build -o "$fb" ./cmd/faultbench
for m in $modes; do
	FB=$fb bench/press/runs.sh examples "$scale" "$out/$m" "$m"
	"$fb" model fromruns "$out/$m"/* --faultload examples/models/nagaraja-faultload.yaml -o "$out/$m.model.yaml" ||
		echo "   fromruns $m exited $?" >&2
done
