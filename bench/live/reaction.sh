#!/bin/sh
# Guard reaction time on examples/guarded-app-hang.yaml: the run as it is
# (the live rule inflight_age fires first) and with only its window rule
# (goodput < 0.5 for 10s). For each run it prints, in run time:
#   inject     the fault's injection (the guard is armed from here)
#   true       the condition first true once armed, before its "for":
#              live rule: the first moment some attempt in flight is older
#              than the threshold (from the attempts, `faultbench export`);
#              window rule: the end of the first window (ending after the
#              injection) whose goodput is below the threshold (windows.csv)
#   holds      the condition has held for its "for": true + for (live), the
#              end of the window that completed it (window; the abort event)
#   fired      the guard fired (the abort event's t_s)
#   reverted   every fault reverted (the abort event)
# and the two reaction times: true -> reverted, fired -> reverted.
#   sh bench/live/reaction.sh [SCALE] [REPS]      # default 0.2, 3
set -eu
scale=${1:-0.2}
reps=${2:-3}
fb=${FB:-go run ./cmd/faultbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=${PORT:-31580}
sed "s/^  nodes: 4$/  nodes: 4\n  port: $port/" examples/guarded-app-hang.yaml > "$tmp/live.yaml"
awk '/inflight_age > 3s|data_error > 0/ {next} {print}' "$tmp/live.yaml" > "$tmp/window.yaml"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -sm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# sh bench/live/reaction.sh $scale $reps"
for variant in live window; do
  for rep in $(seq 1 "$reps"); do
    out="$tmp/$variant-$rep"
    $fb run "$tmp/$variant.yaml" --time-scale "$scale" --quiet -o "$out" >/dev/null 2>&1 || true
    $fb export "$out" --csv -o "$out/requests.csv" >/dev/null 2>&1 || true
    python3 - "$variant" "$out" <<'PY'
import csv, json, re, sys
variant, out = sys.argv[1], sys.argv[2]

def seconds(s):
    m = re.fullmatch(r"([0-9.]+)(ms|s)?", s)
    v = float(m.group(1))
    return v / 1000 if m.group(2) == "ms" else v

inject = abort = None
for line in open(f"{out}/events.jsonl"):
    e = json.loads(line)
    if e["kind"] == "fault.inject" and inject is None:
        inject = e["t_s"]
    if e["kind"] == "abort" and abort is None:
        abort = e
if abort is None:
    print(f"{variant}: no abort in {out}")
    sys.exit(0)
d = abort["detail"]
fired = abort["t_s"]
rev = float(re.search(r"reverted by ([0-9.]+)s", d).group(1))
rule = re.search(r'guard "([^"]+)"', d).group(1)
m = re.fullmatch(r"(\w+) ([<>=!]+) (\S+)(?: for (\S+))?", rule)
metric, op, thr, for_ = m.group(1), m.group(2), m.group(3), m.group(4)
true = holds = None
if metric == "inflight_age":
    t = seconds(thr)
    # The rule is true at time x when some attempt scheduled before x - t
    # is still unanswered at x: attempt a makes it true on
    # (start + t, start + latency).
    for r in csv.DictReader(open(f"{out}/requests.csv")):
        start, lat = float(r["t_start_s"]), float(r["latency_s"])
        if lat > t and start + lat > inject:
            x = max(start + t, inject)
            true = x if true is None else min(true, x)
    holds = true + seconds(for_) if true is not None and for_ else true
else:
    starts = [float(r["t_start_s"]) for r in csv.DictReader(open(f"{out}/windows.csv"))]
    win = starts[1] - starts[0]
    for r in csv.DictReader(open(f"{out}/windows.csv")):
        s, offered, ok = float(r["t_start_s"]), int(r["offered"]), int(r["ok"])
        if s + win > inject and offered > 0 and ok / offered < float(thr):
            true = s + win
            break
    h = re.search(r"window that made it hold ended at ([0-9.]+)s", d)
    holds = float(h.group(1)) if h else None
fmt = lambda v: "-" if v is None else f"{v:.3f}s"
ms = lambda a, b: "-" if a is None or b is None else f"{1000*(b-a):.0f} ms"
print(f"{variant}: rule {rule!r}: inject {fmt(inject)}, true {fmt(true)}, holds {fmt(holds)}, fired {fmt(fired)}, reverted {fmt(rev)}; "
      f"true->reverted {ms(true, rev)}, fired->reverted {1000*(rev-fired):.1f} ms")
PY
  done
done
