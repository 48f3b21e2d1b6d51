#!/usr/bin/env python3
"""The load generator's sustained rate against a 2-node static cluster on
several backends (netns vs local by default; docker too), in one run:
ROUNDS rounds, each one closed-loop run on each backend (the order
rotating from round to round, so a machine that gets busier or quieter
weighs on all alike), then the median rate of each and its ratio to
local.

A closed loop of back-to-back users (think 0) sends as fast as the
generator, the kernel path and the nodes together allow; its completed
requests per second is the sustained rate, and unlike a knee search it
needs no latency bound that a shared, busy machine would miss.

Usage: sudo bench/netns/sustained.py [FAULTBENCH] [ROUNDS] [SECONDS] [BACKENDS]
       (defaults: faultbench on PATH, 5 rounds, 8 s per run, local,netns;
       e.g. local,netns,docker)
Prints one line per run and a Markdown table for docs/benchmarks.md.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

SCENARIO = """name: sustained-{backend}
seed: 1
cluster: {{system: static, backend: {backend}, nodes: 2, pages: 1000, page_size: 8192}}
workload: {{model: closed, users: 8, think: "0", clients: 2, trace: "zipf:1000:1.0", window: 1s}}
phases: [{{name: run, duration: {seconds}s}}]
"""


def run(fb, work, backend, rnd, seconds):
    path = os.path.join(work, "sustained-%s.yaml" % backend)
    with open(path, "w") as f:
        f.write(SCENARIO.format(backend=backend, seconds=seconds))
    out = os.path.join(work, "%s-%d" % (backend, rnd))
    subprocess.run([fb, "run", path, "-o", out, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out, "summary.json")))["overall"]
    return s["throughput_mean_per_s"], s["latency_p50_s"], s["goodput"]


def main():
    fb = sys.argv[1] if len(sys.argv) > 1 else "faultbench"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    backends = (sys.argv[4] if len(sys.argv) > 4 else "local,netns").split(",")
    if "local" not in backends:
        sys.exit("sustained.py: BACKENDS must include local, the reference of the ratios")
    work = tempfile.mkdtemp(prefix="fb-sustained-")
    rates = {b: [] for b in backends}
    p50 = {b: [] for b in backends}
    for r in range(rounds):
        order = backends[r % len(backends):] + backends[:r % len(backends)]
        for b in order:
            rate, lat, good = run(fb, work, b, r, seconds)
            rates[b].append(rate)
            p50[b].append(lat)
            print("round %d %-5s %8.1f ok/s  p50 %.2f ms  goodput %.4f" % (r + 1, b, rate, lat * 1000, good), flush=True)
    ml = statistics.median(rates["local"])
    print()
    print("| backend | median ok/s | runs (ok/s) | median p50 (ms) |")
    print("|---|---|---|---|")
    for b in backends:
        print("| %s | %.0f | %s | %.2f |" % (b, statistics.median(rates[b]), ", ".join("%.0f" % x for x in rates[b]),
                                             statistics.median(p50[b]) * 1000))
    print()
    for b in backends:
        if b != "local":
            print("%s / local = %.2f" % (b, statistics.median(rates[b]) / ml))
    print("(%d rounds of %d s, load average %s, results in %s)" % (rounds, seconds, open("/proc/loadavg").read().split()[:3], work))


if __name__ == "__main__":
    main()
