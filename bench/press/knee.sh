#!/bin/sh
# Table 1's throughput column, measured: the knee of each press mode
# (Brown and Patterson 2000 §3.3: raise the rate until the performance curve
# bends), found by faultbench's own knee search against a 4-node cluster
# with the examples' page set (18,000 pages of 26 KiB, zipf 1.0), and, in the
# same run, the knee of a 4-node static cluster serving the same pages:
# the real peer that says where the load generator and the machine stop,
# not PRESS.
#
#   bench/press/knee.sh [OUTDIR] [MODE...]   (default /tmp/press-knee, all six + static)
#
# Writes OUTDIR/MODE/ (a run whose knee.csv holds every step) and prints
# the table of bench/press/knee.py. FB names the faultbench binary.
set -eu
out=${1:-/tmp/press-knee}
[ $# -ge 1 ] && shift
modes=${*:-"static perf ha robust via0 via3 via5"}
mkdir -p "$out"
fb=${FB:-$out/faultbench}
[ -n "${FB:-}" ] || go build -o "$fb" ./cmd/faultbench
for m in $modes; do
	dir=$out/$m
	[ -e "$dir/knee.csv" ] && continue
	rm -rf "$dir"
	if [ "$m" = static ]; then cluster="system: static"; else cluster="system: press
  mode: $m"; fi
	cat >"$out/$m.yaml" <<YAML
name: press-knee-$m
seed: 1
cluster:
  $cluster
  nodes: 4
  pages: 18000
  page_size: 26624
workload:
  clients: 4
  trace: "zipf:18000:1.0"
  connect_timeout: 2s
  response_timeout: 6s
  window: 1s
  knee: {start: 200, max: 20000, factor: 1.5, refine: 3, step_time: 4s, goodput: 0.99, p99: 500ms, fraction: 0.9}
phases:
  - {name: run, duration: 5s}
YAML
	echo "== $m" >&2
	"$fb" run "$out/$m.yaml" --quiet -o "$dir" || echo "   $m exited $?" >&2
done
python3 bench/press/knee.py "$out" $modes
