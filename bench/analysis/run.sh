#!/bin/sh
# Times `faultbench analyze` on 1M- and 10M-request runs (ROWS: which) and,
# side by side, two peers on the same 1M requests as CSV: mawk computing
# only the mean latency (one pass: a floor for any CSV analysis) and the
# sort-based exact p99 a user would script (sort -g). Prints wall time, CPU
# time (user, system) and peak RSS (/usr/bin/time) for each;
# docs/benchmarks.md ("Analysis") records them.
#
#   sh bench/analysis/run.sh [WORKDIR]     # default /tmp/faultbench-bench-analysis
#   ROWS="1000000 10000000 100000000" sh bench/analysis/run.sh   # and 100M (2 GB)
set -eu
W=${1:-/tmp/faultbench-bench-analysis}
mkdir -p "$W"
go build -o "$W/faultbench" ./cmd/faultbench
go build -o "$W/gen" ./bench/analysis
T='%e s wall, %U s user, %S s sys, %M KB peak RSS'
for rows in ${ROWS:-1000000 10000000}; do
	[ -f "$W/r$rows/requests.parquet" ] || "$W/gen" -rows $rows -o "$W/r$rows"
	for i in 1 2 3; do
		/usr/bin/time -f "analyze parquet $rows: $T" "$W/faultbench" analyze "$W/r$rows" >/dev/null 2>"$W/err" || true
		tail -1 "$W/err"
	done
done
C="$W/r1000000-csv"
mkdir -p "$C"
[ -f "$C/requests.csv" ] || "$W/faultbench" export "$W/r1000000" --csv -o "$C/requests.csv"
cp "$W/r1000000/scenario.yaml" "$W/r1000000/events.jsonl" "$C/"
for i in 1 2 3; do
	/usr/bin/time -f "analyze csv 1000000: $T" "$W/faultbench" analyze "$C" >/dev/null 2>"$W/err" || true
	tail -1 "$W/err"
	/usr/bin/time -f "mawk mean csv 1000000: $T" mawk -F, 'NR>1{s+=$2;n++} END{print s/n}' "$C/requests.csv" >/dev/null
	/usr/bin/time -f "sort -g p99 csv 1000000: $T" sh -c "tail -n +2 '$C/requests.csv' | cut -d, -f2 | sort -g | mawk '{a[NR]=\$1} END{print a[int(NR*0.99+0.999999)]}'" >/dev/null
done
