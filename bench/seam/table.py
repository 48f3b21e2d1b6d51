#!/usr/bin/env python3
"""The before/after table of bench/seam/compare.sh.

    python3 bench/seam/table.py RUNS   (RUNS/PAIR/COMMIT/EXAMPLE-rN/summary.json)

One row per example, pair and commit: the rows recorded (run.attempts:
every arrival scheduled, the same for a seed whatever the machine does),
the service's attempts (overall.attempts: from schema 2 on, the rows less
the generator's refusals and cut-short attempts), goodput, p99 and, for each
fault in summary.json order, its failure duration and behaviour class,
each repetition's value separated by " / ", so run-to-run noise stands
beside any difference between the binaries. Markdown on stdout.
"""
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(v, spec):
    return "–" if v is None else format(v, spec)


def main(root):
    rows = {}  # (example, pair, commit) -> [summary per rep]
    pairs, examples = [], []
    for pair in sorted(os.listdir(root)):
        before, after = pair.split(":")
        pairs.append((pair, before, after))
        for commit in (before, after):
            d = os.path.join(root, pair, commit)
            if not os.path.isdir(d):
                continue
            for run in sorted(os.listdir(d)):
                m = re.fullmatch(r"(.+)-r(\d+)", run)
                p = os.path.join(d, run, "summary.json")
                if not m or not os.path.exists(p):
                    continue
                ex = m.group(1)
                if ex not in examples:
                    examples.append(ex)
                rows.setdefault((ex, pair, commit), []).append(load(p))
    print("| example | commit | rows | attempts | goodput | p99 (s) | faults: failure duration s (class) |")
    print("|---|---|---|---|---|---|---|")
    for ex in examples:
        for pair, before, after in pairs:
            for commit in (before, after):
                sums = rows.get((ex, pair, commit), [])
                if not sums:
                    continue
                o = [s["overall"] for s in sums]
                rws = " / ".join(str(s["run"]["attempts"]) for s in sums)
                att = " / ".join(str(x["attempts"]) for x in o)
                good = " / ".join(fmt(x["goodput"], ".4f") for x in o)
                p99 = " / ".join(fmt(x["latency_p99_s"], ".3f") for x in o)
                faults = []
                for i in range(max(len(s["faults"]) for s in sums)):
                    per = []
                    name = ""
                    for s in sums:
                        if i < len(s["faults"]):
                            f = s["faults"][i]
                            name = f["type"]
                            per.append("%s (%s)" % (fmt(f["failure_duration_s"], ".2f"), f["class"] or "–"))
                        else:
                            per.append("–")
                    faults.append("%s: %s" % (name, " / ".join(per)))
                label = "%s → **%s**" % (before, after) if commit == after else "%s" % before
                print("| %s | %s | %s | %s | %s | %s | %s |" % (ex, label, rws, att, good, p99, "; ".join(faults)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/seam-compare/runs")
