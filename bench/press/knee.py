#!/usr/bin/env python3
"""Tabulates bench/press/knee.sh: each mode's knee (the highest rate whose
step passed: goodput >= 0.99 and p99 <= the bound), the ok throughput and
p99 of that step, the first rate that failed and why, and the ratios to the
static peer and to perf, beside Nagaraja et al. (2002) Table 1.

    python3 bench/press/knee.py OUTDIR [MODE...]
"""
import csv
import json
import os
import sys

PAPER = {"perf": ("TCP-PRESS", 4965), "ha": ("TCP-PRESS-HB", 4965), "robust": ("(not in Table 1)", None),
         "via0": ("VIA-PRESS-0", 6031), "via3": ("VIA-PRESS-3", 6221), "via5": ("VIA-PRESS-5", 7058),
         "static": ("static file servers (peer)", None)}


def knee_of(d):
    path = os.path.join(d, "knee.csv")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    passed = [r for r in rows if r["pass"] == "true" and r["stage"] != "confirm"]
    failed = [r for r in rows if r["pass"] != "true"]
    if not passed:
        return None
    best = max(passed, key=lambda r: float(r["rate_per_s"]))
    above = [r for r in failed if float(r["rate_per_s"]) > float(best["rate_per_s"])]
    first_fail = min(above, key=lambda r: float(r["rate_per_s"])) if above else None
    detail = ""
    ev = os.path.join(d, "events.jsonl")
    if os.path.exists(ev):
        for line in open(ev):
            e = json.loads(line)
            if e.get("kind") == "run.knee":
                detail = e.get("detail", "")
    return best, first_fail, len(rows), detail


def main():
    out = sys.argv[1]
    modes = sys.argv[2:] or ["static", "perf", "ha", "robust", "via0", "via3", "via5"]
    res = {}
    for m in modes:
        try:
            res[m] = knee_of(os.path.join(out, m))
        except (OSError, KeyError, ValueError) as e:
            print(f"{m}: no knee ({e})", file=sys.stderr)
    knee = {m: float(r[0]["rate_per_s"]) for m, r in res.items() if r}
    print("| mode | paper (Table 1) | knee, req/s | ok/s at the knee | p99 at the knee | first failing rate | knee / perf | knee / static |")
    print("|---|---|---|---|---|---|---|---|")
    for m in modes:
        name, paper = PAPER.get(m, (m, None))
        r = res.get(m)
        if not r:
            print(f"| {m} | {name} {paper or ''} | – | – | – | – | – | – |")
            continue
        best, fail, steps, _ = r
        ok = float(best["ok"]) / max(1e-9, float(best["attempts"])) * float(best["rate_per_s"])
        p99 = float(best["latency_p99_s"]) * 1000
        f = "none failed" if not fail else f'{float(fail["rate_per_s"]):.0f} ({fail["why"]})'
        rp = f'{knee[m] / knee["perf"]:.2f}' if "perf" in knee else "–"
        rs = f'{knee[m] / knee["static"]:.2f}' if "static" in knee else "–"
        paper_s = f"{name}, {paper}" if paper else name
        print(f"| {m} | {paper_s} | {knee[m]:.0f} | {ok:.0f} | {p99:.0f} ms | {f} | {rp} | {rs} |")
    if "perf" in knee:
        print()
        print("Paper ratios to TCP-PRESS: VIA-PRESS-0 1.21, VIA-PRESS-3 1.25, VIA-PRESS-5 1.42.")


if __name__ == "__main__":
    main()
