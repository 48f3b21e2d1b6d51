#!/usr/bin/env python3
"""Tabulates PRESS runs like Broadwell (2004) Table 2: per fault and mode, the fault
duration, the failure duration and the behaviour class from summary.json,
plus the mean ok throughput as a fraction of the baseline during the fault
phase. Durations are divided by the run's time scale (read from the run's
scenario.yaml against the example's) so they read in the example's seconds.

    python3 bench/press/table.py RESULTS/press-*/
"""
import json
import os
import re
import sys


def phase_len(path):
    """Sum of the phase durations in seconds of a scenario file."""
    total = 0.0
    for m in re.finditer(r"duration: ([0-9.]+)(ms|s|m)\b", open(path).read().split("phases:")[1].split("faults:")[0]):
        v, unit = float(m.group(1)), m.group(2)
        total += v / 1000 if unit == "ms" else v * 60 if unit == "m" else v
    return total


def main(dirs):
    rows = []
    for d in dirs:
        d = d.rstrip("/")
        name = os.path.basename(d)
        try:
            s = json.load(open(os.path.join(d, "summary.json")))
        except OSError:
            continue
        example = os.path.join("examples", name + ".yaml")
        scale = 1.0
        if os.path.exists(example):
            # phases in the results' scenario.yaml are written as Go durations (e.g. 12s, 1m0s)
            ran = s["run"]["duration_s"]
            scale = ran / phase_len(example)
        base = (s.get("baseline") or {}).get("mean") or float("nan")
        fault_phase = s["phases"].get("fault", {})
        tp = fault_phase.get("throughput_mean_per_s", float("nan")) / base if base == base else float("nan")
        for f in s.get("faults") or []:
            if f["type"] == "restart-all":
                continue
            fd = f.get("fault_duration_s")
            fl = f.get("failure_duration_s")
            rows.append((name, f["type"], fd / scale if fd is not None else None,
                         fl / scale if fl is not None else None, f.get("class", "?"), tp,
                         s["overall"].get("goodput")))
    print(f"| run | fault | fault duration (s) | failure duration (s) | class | fault-phase throughput / baseline | goodput |")
    print("|---|---|---|---|---|---|---|")
    fmt = lambda v, f="%.0f": "–" if v is None or v != v else f % v
    for r in sorted(rows):
        print(f"| {r[0]} | {r[1]} | {fmt(r[2])} | {fmt(r[3])} | {r[4]} | {fmt(r[5], '%.2f')} | {fmt(r[6], '%.3f')} |")


if __name__ == "__main__":
    main(sys.argv[1:])
