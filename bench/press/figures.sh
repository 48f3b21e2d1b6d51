#!/bin/sh
# Phase 2 from the measured single-fault runs of bench/press/nagaraja.sh:
# Nagaraja et al. (2002) Fig. 6 (six modes, application faults 1/day to
# 1/month) and Figs. 7-10 (the VIA modes under pessimistic fault loads).
# Writes the phase-2 inputs to examples/models/measured/ and the figures
# and tables to OUTDIR/figures.
#
#   bench/press/figures.sh [OUTDIR]          (default /tmp/press-nagaraja)
set -eu
out=${1:-/tmp/press-nagaraja}
fb=${FB:-$out/faultbench}
[ -x "$fb" ] || go build -o "$fb" ./cmd/faultbench
m=examples/models/measured
mkdir -p "$m" "$out/figures"
for mode in perf ha robust via0 via3 via5; do
	"$fb" model fromruns "$out/$mode"/* --faultload examples/models/nagaraja-faultload.yaml -o "$m/press-$mode.yaml"
done
for mode in via0 via3 via5; do
	for fig in 7 9 10; do
		"$fb" model fromruns "$out/$mode"/* --faultload "examples/models/nagaraja-fig$fig-faultload.yaml" -o "$m/press-$mode-fig$fig.yaml"
	done
done
all="$m/press-perf.yaml $m/press-ha.yaml $m/press-robust.yaml $m/press-via0.yaml $m/press-via3.yaml $m/press-via5.yaml"
echo "== Fig. 6: application faults from once a day to once a month"
"$fb" model sweep $all --scale application=1/day..1/month -o "$out/figures/fig6" | tee "$out/figures/fig6.txt"
echo "== Fig. 7: VIA packet drops (TCP: no effect)"
"$fb" model sweep "$m/press-via0-fig7.yaml" "$m/press-via3-fig7.yaml" "$m/press-via5-fig7.yaml" \
	--scale vi-packet-drop=1/day..1/month --steps 3 -o "$out/figures/fig7" | tee "$out/figures/fig7.txt"
echo "== Fig. 8: VIA application faults swept (TCP at once a month)"
"$fb" model sweep $all --scale application=1/day..1/month --steps 3 -o "$out/figures/fig8" | tee "$out/figures/fig8.txt"
echo "== Fig. 9: VIA system crashes (TCP: none)"
"$fb" model sweep "$m/press-via0-fig9.yaml" "$m/press-via3-fig9.yaml" "$m/press-via5-fig9.yaml" \
	--scale vi-system-crash=1/week..1/3months --steps 3 -o "$out/figures/fig9" | tee "$out/figures/fig9.txt"
echo "== Fig. 10: the pessimistic combination"
for f in "$m/press-via0-fig10.yaml" "$m/press-via3-fig10.yaml" "$m/press-via5-fig10.yaml"; do
	echo "-- $f"
	"$fb" model performability "$f" | head -5
done | tee "$out/figures/fig10.txt"
