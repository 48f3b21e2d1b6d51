#!/usr/bin/env python3
"""Tabulates the RAID availability benchmarks (examples/raid-*.yaml) from
their results directories, for docs/raid.md:

1. the micro-benchmarks like Brown and Patterson (2000) Table 1: fault x transient policy ->
   behaviour class. The first table is the class of summary.json
   (faults[].class: the ok throughput against the warm-up's band, refined
   by the redundancy series, docs/metrics.md) — what `faultbench report`
   prints too. The second is a cross-check read from windows.csv alone,
   with what the redundancy series did after the fault ("=" unchanged,
   "v^" dropped to 0 and came back: a rebuild, "v" dropped and stayed
   down) and the per-window goodput (ok / offered):
       D: two windows in a row with goodput below 0.1;
       redundancy dropped and came back: C-2 if a window after the fault
         has goodput below 0.95 (requests failed or late), else C-1;
       redundancy dropped and stayed down: B;
       otherwise A, or "A*" when some requests failed though the disk was
         kept (retries and timeouts the policy absorbed).
   Cells where the two disagree are listed.
2. the reconstruction macro-benchmarks: each rebuild's duration (from the
   system.raid.reconstruction.started/finished events; rebuild rates are
   the node's own, so these are real seconds at any --time-scale) against
   the worst throughput drop below the baseline mean in the windows it
   spans, and the worst window p99 latency during it beside the warm-up's
   median window p99 (an open-loop load keeps throughput while latency
   absorbs the rebuild) — the trade-off of §4.2.
3. the double failure: how long the volume refused I/O, what the clients
   saw, and data_error (must be 0).

    python3 bench/raid/table.py RESULTS_DIR [RESULTS_DIR ...]
"""
import csv
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from examples import FAULTS, POLICIES  # noqa: E402


def load(d):
    s = json.load(open(os.path.join(d, "summary.json")))
    with open(os.path.join(d, "windows.csv")) as f:
        w = list(csv.DictReader(f))
    ev = [json.loads(line) for line in open(os.path.join(d, "events.jsonl")) if line.strip()]
    return s, w, ev


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def redundancy_mark(windows, inject_s):
    after = [num(r.get("redundancy")) for r in windows if float(r["t_start_s"]) >= inject_s - 1e-9]
    after = [v for v in after if v is not None]
    if not after:
        return "?"
    if min(after) >= 1:
        return "="
    return "v^" if after[-1] >= 1 else "v"


def goodput_after(windows, inject_s):
    out = []
    for r in windows:
        if float(r["t_start_s"]) + 1e-9 >= inject_s - 1 and float(r["offered"]) > 0:
            out.append(float(r["ok"]) / float(r["offered"]))
    return out


def table1_class(windows, inject_s, mark):
    g = goodput_after(windows, inject_s)
    if any(a < 0.1 and b < 0.1 for a, b in zip(g, g[1:])):
        return "D"
    dip = any(v < 0.95 for v in g)
    if mark == "v^":
        return "C-2" if dip else "C-1"
    if mark == "v":
        return "B"
    return "A*" if dip else "A"


def micro(runs):
    cells = {}
    for d, (s, w, ev) in runs.items():
        name = os.path.basename(d)
        if not name.startswith("raid-micro-"):
            continue
        faults = [f for f in s.get("faults") or [] if f["type"].startswith("disk-")]
        if not faults:
            continue
        f = faults[0]
        mark = redundancy_mark(w, f["inject_s"])
        o = s["overall"]["outcomes"]
        cells[name] = (f.get("class", "?"), mark, o.get("data_error", 0),
                       o.get("http_error", 0) + o.get("timeout", 0) + o.get("conn_abort", 0) + o.get("conn_error", 0),
                       table1_class(w, f["inject_s"], mark))
    if not cells:
        return
    pols = list(POLICIES)
    for title, fmt in (("Behaviour class (summary.json)", lambda c: c[0]),
                       ("Cross-check from windows.csv: redundancy course, goodput reading", lambda c: f"{c[1]} {c[4]}")):
        print(f"\n{title}\n")
        print("| fault (Table 1 row) | " + " | ".join(pols) + " |")
        print("|---|" + "---|" * len(pols))
        for slug, _typ, _mode, row in FAULTS:
            out = []
            for p in pols:
                c = cells.get(f"raid-micro-{slug}-{p}")
                out.append(fmt(c) if c else "–")
            print(f"| {row} | " + " | ".join(out) + " |")
    differ = sorted(k for k, v in cells.items() if v[0] != v[4].rstrip("*"))
    if differ:
        print("\nsummary.json and the cross-check differ: " + ", ".join(f"{k} ({cells[k][0]} vs {cells[k][4]})" for k in differ))
    bad = {k: v for k, v in cells.items() if v[2]}
    failed = sum(v[3] for v in cells.values())
    print(f"\n{len(cells)} micro runs; data_error in {len(bad)} of them {sorted(bad) if bad else ''}; "
          f"{failed} failed requests (503, timeouts, connection errors) in all.")


def rebuilds(ev):
    out, start = [], {}
    for e in ev:
        k = e.get("kind", "")
        if k == "system.raid.reconstruction.started":
            start[e.get("node")] = e["t_s"]
        elif k in ("system.raid.reconstruction.finished", "system.raid.reconstruction.aborted"):
            t0 = start.pop(e.get("node"), None)
            if t0 is not None:
                out.append((t0, e["t_s"], k.rsplit(".", 1)[1]))
    for t0 in start.values():
        out.append((t0, None, "unfinished"))
    return out


def worst_drop(windows, t0, t1, mean):
    """Worst drop of ok throughput below the baseline mean, and of goodput
    (ok / offered) below 1, over the windows from t0 to t1 (None: the end)."""
    lo, glo, p99 = None, None, None
    for r in windows:
        ws = float(r["t_start_s"])
        if ws + 1e-9 < t0 - 1 or (t1 is not None and ws >= t1):
            continue
        v = float(r["throughput_ok_per_s"])
        lo = v if lo is None else min(lo, v)
        if float(r["offered"]) > 0:
            g = float(r["ok"]) / float(r["offered"])
            glo = g if glo is None else min(glo, g)
        if num(r.get("latency_p99_s")) is not None:
            p99 = max(p99 or 0.0, float(r["latency_p99_s"]))
    if lo is None or not mean:
        return None, None, p99
    return max(0.0, 1 - lo / mean), max(0.0, 1 - glo) if glo is not None else None, p99


def baseline_p99(windows, until):
    """Median of the per-window p99 latency before the first fault (the
    first two windows, the warm-up's own ramp, left out)."""
    v = sorted(float(r["latency_p99_s"]) for r in windows[2:]
               if float(r["t_start_s"]) + 1e-9 < until - 1 and num(r.get("latency_p99_s")) is not None)
    return v[len(v) // 2] if v else None


def macro(runs):
    rows = []
    for d, (s, w, ev) in sorted(runs.items()):
        name = os.path.basename(d)
        if not name.startswith("raid-macro-reconstruction-"):
            continue
        mean = (s.get("baseline") or {}).get("mean")
        inj = [f["inject_s"] for f in s.get("faults") or []]
        base99 = baseline_p99(w, min(inj)) if inj else None
        width = float(w[1]["t_start_s"]) - float(w[0]["t_start_s"]) if len(w) > 1 else 0
        for i, (t0, t1, how) in enumerate(rebuilds(ev), 1):
            # Windows that overlap the rebuild: from the one holding its start.
            start = t0 - (t0 % width if width else 0)
            drop = worst_drop(w, start + 1, t1, mean)
            rows.append((name.rsplit("-", 1)[1], i, t0, t1, how, drop, base99))
        classes = ", ".join(f"{f['type']}@{f['inject_s']:.0f}s {f.get('class', '?')}" for f in s.get("faults") or [])
        o = s["overall"]["outcomes"]
        rows.append((name.rsplit("-", 1)[1], "classes", classes, o.get("data_error", 0), None, None, None))
    if not rows:
        return
    print("\nReconstruction macro-benchmark (rebuild times in real seconds)\n")
    print("| policy | rebuild | started (run s) | duration (s) | worst ok drop below baseline mean | worst goodput drop | worst window p99 (baseline) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r[1] == "classes":
            continue
        dur = f"{r[3] - r[2]:.1f}" if r[3] is not None else "not finished"
        if r[4] == "aborted":
            dur += " (aborted)"
        pct = lambda v: f"{100 * v:.0f}%" if v is not None else "–"
        ms = lambda v: f"{1000 * v:.0f} ms" if v is not None else "–"
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {dur} | {pct(r[5][0])} | {pct(r[5][1])} | {ms(r[5][2])} ({ms(r[6])}) |")
    for r in rows:
        if r[1] == "classes":
            print(f"\n{r[0]}: {r[2]}; data_error {r[3]}")


def double(runs):
    for d, (s, w, ev) in sorted(runs.items()):
        if os.path.basename(d) != "raid-macro-double-failure":
            continue
        t = {}
        for e in ev:
            k = e.get("kind", "")
            if k.startswith("system.raid.volume.") and k not in t:
                t[k] = e["t_s"]
        o = s["overall"]["outcomes"]
        failed, forced = t.get("system.raid.volume.failed"), t.get("system.raid.volume.forced")
        print("\nDouble failure\n")
        if failed is not None and forced is not None:
            print(f"volume refused I/O from {failed:.1f} s to {forced:.1f} s (run seconds): {forced - failed:.1f} s")
        print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(o.items())))
        lost = sum(1 for e in ev if e.get("kind") == "system.raid.blocks.lost")
        print(f"blocks.lost events: {lost}; classes: " +
              ", ".join(f"{f['type']} {f.get('class', '?')}" for f in s.get("faults") or []))


def main(args):
    runs = {}
    for a in args:
        for d in [a] + glob.glob(os.path.join(a, "raid-*")):
            d = d.rstrip("/")
            if os.path.exists(os.path.join(d, "summary.json")):
                runs[d] = load(d)
    micro(runs)
    macro(runs)
    double(runs)


if __name__ == "__main__":
    main(sys.argv[1:] or ["/tmp/raid-runs"])
