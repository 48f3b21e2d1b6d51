#!/bin/sh
# The seam changed no measurement: the same five examples, same seed, run
# with the binary of the commit just before each step of the seam (issue
# 12) and the binary of the commit that merged it, alternating before and
# after so that the machine's load falls on both alike; then the table of
# bench/seam/table.py (attempts, goodput, p99, each fault's failure
# duration and class from summary.json).
#
#   bench/seam/compare.sh [OUTDIR]    (default /tmp/seam-compare)
#
# Environment: PAIRS (default "d6a1c46:76daf48 1ee844c:ae06410": the
# merges of h1-seam and h12-seam2, each with its first parent), REPS
# (default 2), SCALE (--time-scale, default 0.2), EXAMPLES (names under
# examples/, default below). Run from the repository root; binaries are
# built from `git archive` of each commit into OUTDIR/bin (no worktree).
#
# The raid example's knee search is replaced by rate: 300 (what the
# search found when the example was made): a search on a loaded machine
# finds a different rate each time, and both binaries must offer the same
# load. nginx.yaml needs nginx (apt-get install nginx-light).
set -eu
out=${1:-/tmp/seam-compare}
pairs=${PAIRS:-"d6a1c46:76daf48 1ee844c:ae06410"}
reps=${REPS:-2}
scale=${SCALE:-0.2}
examples=${EXAMPLES:-"quickstart press-ha-app-crash ssm-brick-kill raid-micro-hang-read-tolerant nginx"}
mkdir -p "$out/bin" "$out/scenarios"

for e in $examples; do
	if [ "$e" = raid-micro-hang-read-tolerant ]; then
		sed '/^  knee:/d; s/^workload:$/workload:\n  rate: 300/' "examples/$e.yaml" >"$out/scenarios/$e.yaml"
	else
		cp "examples/$e.yaml" "$out/scenarios/$e.yaml"
	fi
done
# nginx.yaml names files beside it (its paths trace and config).
cp examples/nginx-paths.txt "$out/scenarios/" 2>/dev/null || true

build() {
	c=$1
	[ -x "$out/bin/fb-$c" ] && return
	src=$(mktemp -d)
	git archive "$c" | tar -x -C "$src"
	(cd "$src" && go build -o "$out/bin/fb-$c" ./cmd/faultbench)
	rm -rf "$src"
}
for p in $pairs; do
	build "${p%%:*}"
	build "${p##*:}"
done

for r in $(seq 1 "$reps"); do
	for e in $examples; do
		for p in $pairs; do
			for c in "${p%%:*}" "${p##*:}"; do
				dir=$out/runs/$p/$c/$e-r$r
				[ -e "$dir/summary.json" ] && continue
				rm -rf "$dir"
				mkdir -p "$(dirname "$dir")"
				load=$(cut -d' ' -f1 /proc/loadavg)
				st=0
				"$out/bin/fb-$c" run "$out/scenarios/$e.yaml" --time-scale "$scale" --seed 1 -o "$dir" --quiet >"$dir.log" 2>&1 || st=$?
				echo "$p $c $e r$r: exit $st (load $load at start)"
				echo "$load" >"$dir.load"
				rm -rf "$dir"/node-* "$dir"/figures
			done
		done
	done
done
python3 "$(dirname "$0")/table.py" "$out/runs"
