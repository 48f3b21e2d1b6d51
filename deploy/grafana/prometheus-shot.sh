#!/bin/sh
# What the Grafana board shows, without Grafana: Debian's prometheus
# scrapes a run of examples/quickstart.yaml every second, then headless
# chromium screenshots Prometheus's own graph page holding the board's
# main queries (docs/metrics.md, "The board's main queries in Prometheus").
#   sh deploy/grafana/prometheus-shot.sh [OUT.png]   # default docs/img/prometheus-board.png
# Needs prometheus, chromium, python3; uses 127.0.0.1:19464 and :19090.
set -eu
out=${1:-docs/img/prometheus-board.png}
fb=${FB:-go run ./cmd/faultbench}
tmp=$(mktemp -d)
prom_pid= run_pid=
cleanup() {
  [ -n "$run_pid" ] && kill "$run_pid" 2>/dev/null || true
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
cat > "$tmp/prometheus.yml" <<'EOF'
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: faultbench
    static_configs: [{targets: ["127.0.0.1:19464"]}]
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address=127.0.0.1:19090 >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
# The linger keeps the endpoint up for the last scrapes; the script ends
# the run (Ctrl-C ends a linger) once it has its picture.
$fb run examples/quickstart.yaml -o "$tmp/run" --quiet --metrics 127.0.0.1:19464 --metrics-linger 10m >"$tmp/run.log" 2>&1 &
run_pid=$!
q() { curl -s "http://127.0.0.1:19090/api/v1/query?query=$1"; }
i=0
until q faultbench_run_finished | grep -q '"1"\]'; do
  i=$((i + 1))
  [ "$i" -gt 300 ] && { echo "the run did not finish within 5 minutes" >&2; cat "$tmp/run.log" >&2; exit 1; }
  sleep 1
done
sleep 3 # a few scrapes of the ended run
url=$(python3 - "$tmp/run/provenance.json" <<'PY'
import datetime, json, math, sys, urllib.parse
start = datetime.datetime.fromisoformat(json.load(open(sys.argv[1]))["started_utc"][:26])
# The page takes the graph's end to the minute: end on the first whole
# minute after the run (55 s) and reach back to its start.
end = start + datetime.timedelta(seconds=55 + 2)
end = end.replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
span = math.ceil((end - start).total_seconds()) + 3
exprs = [
    'sum by (outcome) (rate(faultbench_requests_total[10s]))',
    '{__name__=~"faultbench_window_(offered|ok)_requests_per_second"}',
    'histogram_quantile(0.99, sum by (le) (rate(faultbench_request_duration_seconds_bucket[10s])))',
    'faultbench_inflight_oldest_age_seconds',
    'max by (type, target) (faultbench_fault_active)',
]
q = []
for i, e in enumerate(exprs):
    q += [(f"g{i}.expr", e), (f"g{i}.tab", "0"), (f"g{i}.stacked", "0"), (f"g{i}.show_exemplars", "0"),
          (f"g{i}.range_input", f"{span}s"), (f"g{i}.end_input", end.strftime("%Y-%m-%d %H:%M:%S"))]
print("http://127.0.0.1:19090/graph?" + urllib.parse.urlencode(q))
PY
)
# Tall enough for all five panels: a shorter window scrolls the page and
# the screenshot misses the first.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,3800 \
  --virtual-time-budget=15000 --screenshot="$out" "$url" 2>/dev/null
echo "wrote $out"
