#!/usr/bin/env python3
"""Split a process's CPU samples by the system call they were taken in.

perf on a virtual machine without a PMU samples with cpu-clock only, and
`perf report` then shows kernel leaf functions, not which system call a
request spent its time in. This reads `perf script -F ip,sym` output of a
call-graph recording and charges each sample to the kernel function just
above do_syscall_64 in its chain (the system call), or to "user" when the
chain has no system call. With the number of requests the recording
covered, it prints microseconds a request for each.

    perf record -F 4999 -g -p PID -o out.perf -- sleep 2
    perf script -i out.perf -F ip,sym > out.txt
    python3 bench/perfsplit/perfsplit.py out.txt REQUESTS SECONDS

REQUESTS is the requests the process completed in those SECONDS (for a
rate R held for the whole recording, R * SECONDS). The figures assume the
process was on a CPU for the whole recording, as a generator at its
ceiling is; below it, read the percentages.
"""
import collections
import sys


def split(lines):
    counts = collections.Counter()
    chain = []

    def flush():
        if not chain:
            return
        calls = [i for i, f in enumerate(chain) if "do_syscall_64" in f]
        if calls and calls[0] > 0:
            counts[chain[calls[0] - 1].split()[-1]] += 1
        else:
            counts["user"] += 1

    for line in lines:
        if not line.strip() or line[0] not in " \t":
            flush()
            chain = []
            continue
        chain.append(line.strip())
    flush()
    return counts


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, requests, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    with open(path) as f:
        counts = split(f)
    total = sum(counts.values())
    if total == 0:
        sys.exit(f"perfsplit: {path}: no samples with call chains (record with -g)")
    print(f"{'where':<34} {'share':>6} {'µs a request':>13}")
    for name, n in counts.most_common(15):
        print(f"{name:<34} {100 * n / total:5.1f}% {n / total * seconds * 1e6 / requests:13.1f}")


if __name__ == "__main__":
    main()
