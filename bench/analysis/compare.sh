#!/bin/sh
# Times `faultbench analyze` of two builds on the same results directories,
# alternately (old, new, old, new, ...) REPS times each, so that both see
# the same machine: wall time, CPU time (user + system) and peak RSS from
# /usr/bin/time, with the 1-minute load average before each run; then the
# medians, and whether the two builds wrote the same summary.json. On a
# shared machine compare CPU times and ratios, not walls.
#
#   git archive main | (mkdir -p /tmp/fb-main && tar -x -C /tmp/fb-main) &&
#     (cd /tmp/fb-main && go build -o /tmp/faultbench-main ./cmd/faultbench)
#   go build -o /tmp/faultbench-new ./cmd/faultbench
#   go run ./bench/analysis -rows 100000000 -o /tmp/fb-100m     # 2 GB
#   sh bench/analysis/compare.sh /tmp/faultbench-main /tmp/faultbench-new /tmp/fb-10m /tmp/fb-100m
set -eu
[ $# -ge 3 ] || { echo "usage: compare.sh OLD NEW DIR..." >&2; exit 2; }
OLD=$1 NEW=$2
shift 2
REPS=${REPS:-3}
LOG=$(mktemp)
ERR=$(mktemp)
SUMS=$(mktemp -d)
trap 'rm -rf "$LOG" "$ERR" "$SUMS"' EXIT

# one BIN DIR REP: time one analysis, print it and log "bin dir wall cpu rss load".
one() {
	load=$(cut -d' ' -f1 /proc/loadavg)
	# exit status 3 is a missed threshold of the scenario, not a failure
	/usr/bin/time -f "%e %U %S %M" "$1" analyze "$2" >/dev/null 2>"$ERR" || [ $? -eq 3 ] || { cat "$ERR" >&2; exit 1; }
	tail -1 "$ERR" | awk -v b="$(basename "$1")" -v d="$(basename "$2")" -v l="$load" '{print b, d, $1, $2 + $3, $4, l}' >>"$LOG"
	cp "$2/summary.json" "$SUMS/$(basename "$1").$(basename "$2").json"
	tail -1 "$LOG" | awk -v i="$3" '{printf "%-20s %-10s rep %d: %7.2f s wall %7.2f s CPU %6.0f MB peak RSS  load %s\n", $1, $2, i, $3, $4, $5 / 1024, $6}'
}

# median COLUMN BIN DIR
median() {
	awk -v b="$2" -v d="$3" -v c="$1" '$1 == b && $2 == d {print $c}' "$LOG" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -srm), $(nproc) CPUs, $REPS runs each, alternating"
for dir in "$@"; do
	cat "$dir"/requests.parquet >/dev/null 2>&1 || true # into the page cache, for both
	for i in $(seq "$REPS"); do
		one "$OLD" "$dir" "$i"
		one "$NEW" "$dir" "$i"
	done
done
echo "# medians"
awk '{print $1, $2}' "$LOG" | sort -u | while read -r b d; do
	printf '%-20s %-10s %7.2f s wall %7.2f s CPU %6.0f MB peak RSS  load %s\n' "$b" "$d" \
		"$(median 3 "$b" "$d")" "$(median 4 "$b" "$d")" "$(median 5 "$b" "$d" | awk '{print $1 / 1024}')" "$(median 6 "$b" "$d")"
done
echo "# summary.json of the two builds"
for dir in "$@"; do
	if cmp -s "$SUMS/$(basename "$OLD").$(basename "$dir").json" "$SUMS/$(basename "$NEW").$(basename "$dir").json"; then
		echo "$(basename "$dir"): identical, byte for byte"
	else
		echo "$(basename "$dir"): differ:"
		diff "$SUMS/$(basename "$OLD").$(basename "$dir").json" "$SUMS/$(basename "$NEW").$(basename "$dir").json" | head -20
	fi
done
