#!/bin/sh
# Runs one mode's single-fault examples, EXDIR/press-MODE-FAULT.yaml for
# the eleven fault types of Nagaraja et al. (2002)'s table, into
# OUTDIR/FAULT/; a run already there is kept. Used by nagaraja.sh
# (EXDIR examples: their 90-second faults) and validate.sh (EXDIR
# examples/validate: the accelerated load's occurrences).
#
#   FB=faultbench bench/press/runs.sh EXDIR SCALE OUTDIR MODE
set -eu
exdir=$1 scale=$2 out=$3 m=$4
faults="link-down switch-down node-crash node-freeze mem-pin-fail mem-alloc-fail app-crash app-hang bad-param-null bad-param-offset bad-param-size"
mkdir -p "$out"
for f in $faults; do
	dir=$out/$f
	[ -e "$dir/summary.json" ] && continue
	rm -rf "$dir"
	echo "== $m $f ($exdir)" >&2
	"$FB" run "$exdir/press-$m-$f.yaml" --time-scale "$scale" --quiet -o "$dir" || echo "   $m $f exited $?" >&2
done
