#!/usr/bin/env python3
"""Inject-to-effect and revert-to-effect latency per fault, from a netns
run's events.jsonl: the time from fault.inject to the last fault.effective
of the same occurrence (or, for the process faults whose events carry only
the node, the first on that node after it), and from fault.clear to the
last fault.reverted.

Usage: bench/netns/latency.py RESULTS_DIR
"""
import json
import sys


def main(path):
    evs = [json.loads(l) for l in open(path + "/events.jsonl")]
    print("| fault | inject -> effective (ms) | clear -> reverted (ms) | evidence |")
    print("|---|---|---|---|")
    for i, e in enumerate(evs):
        if e["kind"] != "fault.inject":
            continue
        oid, node = e.get("id"), e.get("node", 0)

        def follow(start, kind, stop_kind):
            t, ev = None, None
            for f in evs[start + 1:]:
                if f["kind"] == stop_kind and (f.get("id") == oid or stop_kind == "fault.inject"):
                    break
                if f["kind"] == kind and (f.get("id") == oid or ("id" not in f and f.get("node") == node)):
                    t, ev = f["t_s"], f
            return t, ev

        t_eff, ev = follow(i, "fault.effective", "fault.clear")
        j = next((k for k in range(i + 1, len(evs)) if evs[k]["kind"] == "fault.clear" and evs[k].get("id") == oid), None)
        t_rev = None
        if j is not None:
            t_rev, _ = follow(j, "fault.reverted", "fault.inject")
        eff = "%.1f" % ((t_eff - e["t_s"]) * 1000) if t_eff else "-"
        rev = "%.1f" % ((t_rev - evs[j]["t_s"]) * 1000) if t_rev and j is not None else "-"
        detail = (ev or {}).get("detail", "")[:90]
        print("| %s | %s | %s | %s |" % (e["fault"], eff, rev, detail))


if __name__ == "__main__":
    main(sys.argv[1])
