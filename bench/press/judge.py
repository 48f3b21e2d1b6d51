#!/usr/bin/env python3
"""What the goodput judge (results schema 3) changes on real runs: each run
is analysed twice, `--judge throughput` (the figure of schema 2) and
`--judge goodput` (the open-loop default), on a copy of its record, and the
deviations, each fault's failure duration, class and stage durations are
set side by side. A row marked * moved.

    python3 bench/press/judge.py FB RUNDIR... > bench/press/results/judge.md

FB is the faultbench binary; RUNDIR are results directories (e.g. those of
bench/press/nagaraja.sh). The run directories are not touched.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

FILES = ["requests.parquet", "requests.csv", "events.jsonl", "scenario.yaml", "provenance.json", "windows.csv"]


def analyse(fb, run, judge):
    with tempfile.TemporaryDirectory() as tmp:
        for f in FILES:
            if os.path.exists(os.path.join(run, f)):
                shutil.copy(os.path.join(run, f), tmp)
        out = subprocess.run([fb, "analyze", tmp, "--judge", judge, "--json"], capture_output=True, text=True)
        if out.returncode not in (0, 3):
            raise RuntimeError(f"{run}: analyze --judge {judge} exited {out.returncode}: {out.stderr.strip()}")
        return json.loads(out.stdout)


def stages(f):
    return " ".join(f"{k}{f['stages'][k]['duration_s']:.1f}" for k in "ABCDEFG" if f["stages"][k]["duration_s"] > 0)


def main():
    fb, runs = sys.argv[1], sys.argv[2:]
    print("| run | fault | deviations thr → good | failure s thr → good | class thr → good | stages (s) thr | stages (s) good |")
    print("|---|---|---|---|---|---|---|")
    moved = total = 0
    classes, small, large = {}, 0, 0
    for run in runs:
        t, g = analyse(fb, run, "throughput"), analyse(fb, run, "goodput")
        name = os.path.relpath(run, os.path.dirname(os.path.dirname(run.rstrip("/"))))
        for ft, fg in zip(t["faults"], g["faults"]):
            st, sg = stages(ft), stages(fg)
            same = (ft["class"] == fg["class"] and ft["failure_duration_s"] == fg["failure_duration_s"] and st == sg)
            total += 1
            moved += not same
            if ft["class"] != fg["class"]:
                k = f"{ft['class'] or '-'} → {fg['class'] or '-'}"
                classes[k] = classes.get(k, 0) + 1
            dd = abs(fg["failure_duration_s"] - ft["failure_duration_s"])
            w = t["run"]["window_s"]
            small += 0 < dd <= w + 1e-9
            large += dd > w + 1e-9
            mark = "" if same else " *"
            print(f"| {name}{mark} | {ft['type']} | {len(t['deviations'] or [])} → {len(g['deviations'] or [])} | "
                  f"{ft['failure_duration_s']:g} → {fg['failure_duration_s']:g} | {ft['class']} → {fg['class']} | {st} | {sg} |")
    print()
    print(f"{moved} of {total} faults moved (class, failure duration or a stage).")
    print(f"Failure duration: {small} moved by one window, {large} by more.")
    print("Classes that changed: " + (", ".join(f"{k} ({v})" for k, v in sorted(classes.items())) or "none") + ".")


if __name__ == "__main__":
    main()
