#!/usr/bin/env python3
"""Markdown tables from a `faultbench reproduce` results directory.

    python3 bench/reproduce/tables.py [DIR] TABLE     # DIR: default docs/results/reproduce
    python3 bench/reproduce/tables.py [DIR] --list    # the tables, and which runs they read

The docs' measured tables are printed by this script from the committed
run (docs/papers.md, "Reproducing a paper"), so that every number they
quote can be checked against a file. DIR holds runs as
DIR/PAPER/EXPERIMENT/RUN/rN/ (an example's repetitions) or
DIR/PAPER/EXPERIMENT/SWEEP/rN/cfg-NNNN-r1/ (a sweep's configuration N).

Each cell is the median over the repetitions, with the range in
parentheses where the repetitions differ once formatted
("0.874 (0.861–0.880)"); a text cell such as a behaviour class is the most
frequent value, ties to the first repetition's, with the others counted
("C-1 (2 of 3; B ×1)", as `faultbench reproduce` writes it). A run or a
value that is missing or failed is "–" or is counted without, with a
numbered note under the table; the script never stops on missing data.

A table is data, in TABLES below: rows name runs, columns name summary.json
key paths and their formatting. To add one (SSM, RAID, ...), add an entry;
no code.
"""
import json
import math
import os
import re
import sys

DEFAULT_DIR = "docs/results/reproduce"

# A column:
#   head     header text
#   key      summary.json path, dotted: "faults.0.class", "failure.p_exceed.0.1"
#            (a key that itself holds dots, such as p_exceed's "0.1", is
#            found whole); "{name}" is replaced by the row's vars[name]
#   per      a second path: the cell is key / per, in each repetition
#   unscale  divide by the run's time scale (reproduce-run.json)
#   factor   multiply by this
#   fmt      a format spec ("{:.3f}") or a name in FORMATS
#   events   {"from": KIND, "to": KIND}: seconds from the first event of kind
#            from to the first of kind to after it (events.jsonl), as the
#            reproduce claims measure it
#   event_numbers
#            {"kind": KIND, "after": KIND, "between": [KEY, KEY], "value": V}:
#            the events of that kind (after the first event of kind after;
#            at times from the first key's value to the second's), and V one
#            of count, or sum, first, max of the first number in each detail
#   text     the cell is this text, "{name}" replaced from the row's vars
#            (published values beside the measured ones)
#   mode     True: the values are texts; the cell is the most frequent
#   missing  what the note says when a repetition lacks the key
# A row:
#   labels   the first cells (the table's "labels" headers); a first label
#            equal to the row above's is left blank, as the docs write it
#   run      the run's directory under DIR, holding r1, r2, ...
#   config   a sweep configuration: repetitions are rN/cfg-NNNN-r1
#   vars     names for the columns' "{name}" and "text"

# Every failure.* key is absent from a run in which no window left the
# baseline band.
_NO_FAILURE = "no failure interval (no window outside the baseline band)"


def _table2_row(fault, mode, paper=""):
    return {"labels": [fault, mode], "run": "broadwell04/table2/press-%s-%s" % (mode, fault.split(" ")[0]),
            "vars": {"paper": paper}}


def _failure_row(fault, mode):
    return {"labels": [fault, mode], "run": "broadwell04/table2/press-%s-%s" % (mode, fault)}


def _sweep_rows(run, labels):
    return [{"labels": [label], "run": run, "config": i + 1} for i, label in enumerate(labels)]


# Per phase: goodput and 95% trimmed-mean wait, as docs/press.md's
# sensitivity tables read them.
_SENSITIVITY_COLUMNS = [
    {"head": "warm-up goodput", "key": "phases.warmup.goodput", "fmt": "{:.4f}"},
    {"head": "warm-up wait", "key": "phases.warmup.latency_trimmed_mean_s", "fmt": "ms"},
    {"head": "recovery goodput", "key": "phases.recovery.goodput", "fmt": "{:.4f}"},
    {"head": "recovery wait", "key": "phases.recovery.latency_trimmed_mean_s", "fmt": "ms"},
    {"head": "recovery p(>0.1 s)", "key": "phases.recovery.p_exceed.0.1", "fmt": "{:.3f}"},
    {"head": "post goodput", "key": "phases.post.goodput", "fmt": "{:.4f}"},
]

TABLES = {
    "press-table2": {
        "what": "Broadwell (2004) Table 2 and Fig. 13: each fault's duration, failure duration and class, "
                "fault-phase throughput over the baseline, goodput and demerits of the whole run (docs/press.md, Results)",
        "labels": ["fault", "mode"],
        "columns": [
            {"head": "fault duration", "key": "faults.0.fault_duration_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "failure duration", "key": "faults.0.failure_duration_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "class", "key": "faults.0.class", "mode": True},
            {"head": "fault-phase throughput", "key": "phases.fault.throughput_mean_per_s", "per": "baseline.mean",
             "fmt": "{:.2f}"},
            {"head": "goodput", "key": "overall.goodput", "fmt": "{:.3f}"},
            {"head": "demerits", "key": "overall.demerits", "fmt": "{:.0f}"},
            {"head": "Broadwell (2004) Table 2 (fault / failure)", "text": "{paper}"},
        ],
        "rows": [
            _table2_row("app-hang (30 s)", "perf", "30 / 35"),
            _table2_row("app-hang (30 s)", "ha", "30 / 35"),
            _table2_row("app-crash", "perf", "90 / 105"),
            _table2_row("app-crash", "ha", "90 / 90"),
            _table2_row("node-crash", "perf", "90 / 195"),
            _table2_row("node-crash", "ha", "90 / 170"),
            _table2_row("node-freeze", "perf", "90 / 300"),
            _table2_row("node-freeze", "ha", "90 / 280"),
            _table2_row("link-down", "perf", "90 / 105"),
            _table2_row("link-down", "ha", "90 / 95"),
            {"labels": ["app-hang, perf, 400 req/s (Fig. 13)", "perf"], "run": "broadwell04/fig13/press-load-400-app-hang",
             "vars": {"paper": ""}},
            {"labels": ["app-hang, perf, 800 req/s (Fig. 13)", "perf"], "run": "broadwell04/fig13/press-load-800-app-hang",
             "vars": {"paper": ""}},
        ],
    },
    "press-figs14-19": {
        "what": "Broadwell (2004) Figs. 14-19: the failure interval's metrics of the ten Table 2 tests "
                "(docs/press.md, Figs. 14-19)",
        "labels": ["fault", "mode"],
        "columns": [dict(c, missing=_NO_FAILURE) for c in [
            {"head": "failure (s, ÷ time scale)", "key": "failure.duration_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "ok/s", "key": "failure.throughput_mean_per_s", "fmt": "{:.0f}"},
            {"head": "trimmed mean", "key": "failure.latency_trimmed_mean_s", "fmt": "ms"},
            {"head": "goodput", "key": "failure.goodput", "fmt": "{:.3f}"},
            {"head": "punctuality", "key": "failure.punctuality", "fmt": "{:.3f}"},
            {"head": "P(>0.1 s)", "key": "failure.p_exceed.0.1", "fmt": "{:.2f}"},
            {"head": "P(>1 s)", "key": "failure.p_exceed.1", "fmt": "{:.2f}"},
            {"head": "P(>2 s)", "key": "failure.p_exceed.2", "fmt": "{:.2f}"},
            {"head": "demerits", "key": "failure.demerits", "fmt": "{:.0f}"},
        ]],
        "rows": [_failure_row(f, m) for f in ("app-hang", "app-crash", "node-crash", "node-freeze", "link-down")
                 for m in ("perf", "ha")],
    },
    "press-fig12": {
        "what": "Broadwell (2004) Fig. 12: HA-PRESS's short hang, per phase (docs/press.md, Fig. 12)",
        "labels": ["phase"],
        "columns": [
            {"head": "goodput", "key": "phases.{phase}.goodput", "fmt": "{:.3f}"},
            {"head": "timed out", "key": "phases.{phase}.outcomes.timeout", "per": "phases.{phase}.attempts",
             "fmt": "pct"},
            {"head": "HTTP errors", "key": "phases.{phase}.outcomes.http_error", "fmt": "{:.0f}"},
            {"head": "refused", "key": "phases.{phase}.outcomes.conn_error", "fmt": "{:.0f}"},
            {"head": "out-of-sequence events", "fmt": "{:.0f}",
             "event_numbers": {"kind": "system.out_of_sequence", "value": "count",
                               "between": ["phases.{phase}.start_s", "phases.{phase}.end_s"]}},
            {"head": "messages dropped, most in one event", "fmt": "{:.0f}",
             "event_numbers": {"kind": "system.out_of_sequence", "value": "max",
                               "between": ["phases.{phase}.start_s", "phases.{phase}.end_s"]}},
        ],
        "rows": [{"labels": [label], "run": "broadwell04/fig12/press-ha-short-hang", "vars": {"phase": phase}}
                 for label, phase in (("warm-up", "warmup"), ("hang", "hang"), ("resumed", "resumed"),
                                      ("before-restart", "before-restart"), ("restarted", "restarted"))],
    },
    "press-fig12-events": {
        "what": "Broadwell (2004) Fig. 12: when HA-PRESS's out-of-sequence drops start, and the hang's "
                "failure interval (docs/press.md, Fig. 12)",
        "labels": ["run"],
        "columns": [
            {"head": "first drop after the resume (s)", "fmt": "{:.2f}",
             "events": {"from": "fault.clear", "to": "system.out_of_sequence"}},
            {"head": "messages dropped, first event", "fmt": "{:.0f}",
             "event_numbers": {"kind": "system.out_of_sequence", "after": "fault.clear", "value": "first"}},
            {"head": "out-of-sequence events", "fmt": "{:.0f}",
             "event_numbers": {"kind": "system.out_of_sequence", "after": "fault.clear", "value": "count"}},
            {"head": "failure from (s, ÷ time scale)", "key": "faults.0.failure_start_s", "unscale": True,
             "fmt": "{:.0f}"},
            {"head": "failure to", "key": "faults.0.failure_end_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "class", "key": "faults.0.class", "mode": True},
        ],
        "rows": [{"labels": ["press-ha-short-hang"], "run": "broadwell04/fig12/press-ha-short-hang"}],
    },
    "press-sensitivity-process": {
        "what": "Broadwell (2004) §4.4: Perf-PRESS under Fig. 13's hang with per-request processing "
                "(docs/press.md, Per-request processing time)",
        "labels": ["process-time"],
        "columns": _SENSITIVITY_COLUMNS,
        "rows": _sweep_rows("broadwell04/sensitivity-process/press-perf-app-hang-process-time",
                            ["0", "2.5 ms", "5 ms", "7.5 ms", "10 ms"]),
    },
    "press-sensitivity-network": {
        "what": "Broadwell (2004) §4.4: the same with node 1's intra-cluster links delayed, the delays after "
                "scaling (docs/press.md, Per-request processing time)",
        "labels": ["delay each way"],
        "columns": _SENSITIVITY_COLUMNS,
        "rows": _sweep_rows("broadwell04/sensitivity-network/press-perf-app-hang-link-delay",
                            ["0.1 ms", "1 ms", "2 ms", "5 ms", "10 ms"]),
    },
    "press-nagaraja-faults": {
        "what": "Nagaraja et al. (2002) Figs. 2-4: TCP-PRESS (perf) under link-down, node-crash and "
                "mem-alloc-fail, the runs behind nagaraja02's claims fig2-fig4",
        "labels": ["fault"],
        "columns": [
            {"head": "class", "key": "faults.0.class", "mode": True},
            {"head": "fault duration", "key": "faults.0.fault_duration_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "failure duration", "key": "faults.0.failure_duration_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "fault-phase throughput", "key": "phases.fault.throughput_mean_per_s", "per": "baseline.mean",
             "fmt": "{:.2f}"},
            {"head": "goodput", "key": "overall.goodput", "fmt": "{:.3f}"},
        ],
        "rows": [{"labels": [f], "run": "nagaraja02/faults/press-perf-" + f}
                 for f in ("link-down", "node-crash", "mem-alloc-fail")],
    },
}


def _ms(v):
    ms = v * 1000
    if ms == 0:
        return "0"
    if ms >= 100:
        return "%.0f" % ms
    return "%.1f" % ms


FORMATS = {
    # a wait in milliseconds, a tenth below 100: 0.7, 23.5, 182, 1165
    "ms": {"number": _ms, "unit": " ms"},
    # a fraction as a percentage
    "pct": {"number": lambda v: "%.1f" % (v * 100), "unit": "%"},
}


class Missing(Exception):
    """A value a repetition does not have; its text becomes a note."""


def lookup(doc, path):
    """Follows a dotted path; a key holding dots ("0.1") is matched whole."""
    parts = path.split(".")
    cur, i = doc, 0
    while i < len(parts):
        if isinstance(cur, list):
            try:
                cur = cur[int(parts[i])]
            except (ValueError, IndexError):
                raise Missing("no %s" % ".".join(parts[:i + 1]))
            i += 1
            continue
        if not isinstance(cur, dict):
            raise Missing("no %s" % ".".join(parts[:i + 1]))
        for j in range(len(parts), i, -1):
            name = ".".join(parts[i:j])
            if name in cur:
                cur, i = cur[name], j
                break
        else:
            raise Missing("no %s" % ".".join(parts[:i + 1]))
    if cur is None:
        raise Missing("%s is null" % path)
    return cur


def read_events(rep):
    """(time, kind, detail) of every event of events.jsonl, in order."""
    events = []
    try:
        with open(os.path.join(rep, "events.jsonl")) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                events.append((float(e.get("t_s", 0)), e.get("kind", ""), e.get("detail", "")))
    except OSError as err:
        raise Missing("no events.jsonl (%s)" % err.strerror)
    return events


def event_span(rep, span):
    start = None
    for t, kind, _ in read_events(rep):
        if start is None:
            if kind == span["from"]:
                start = t
        elif kind == span["to"]:
            return t - start
    if start is None:
        raise Missing("no %s event" % span["from"])
    raise Missing("no %s event after %s" % (span["to"], span["from"]))


def event_numbers(rep, spec, summary, names):
    """spec["value"] of the events of spec["kind"] inside the bounds: their
    count, or the sum, first or largest of the first number in each detail
    ("dropped 925 messages from node 2")."""
    start, end = -math.inf, math.inf
    if "between" in spec:
        start, end = (float(lookup(summary, k.format(**names))) for k in spec["between"])
    seen = "after" not in spec
    numbers = []
    for t, kind, detail in read_events(rep):
        if not seen:
            seen = kind == spec["after"]
            continue
        if kind != spec["kind"] or not start <= t < end:
            continue
        m = re.search(r"\d+", detail)
        numbers.append(float(m.group()) if m else math.nan)
    if not seen:
        raise Missing("no %s event" % spec["after"])
    how = spec.get("value", "count")
    if how == "count":
        return len(numbers)
    if not numbers:
        if how == "sum":
            return 0
        raise Missing("no %s event there" % spec["kind"])
    return {"sum": sum, "first": lambda xs: xs[0], "max": max}[how](numbers)


class Repetition:
    """One repetition's directory, its summary and time scale read once."""

    def __init__(self, root, path):
        self.path = path
        self.root = root
        self.failed = None
        self.summary = None
        self.scale = None
        failed = os.path.join(path, "failed.txt")
        if os.path.exists(failed):
            with open(failed, errors="replace") as f:
                self.failed = "failed: " + (f.read().strip().splitlines() or ["(failed.txt is empty)"])[0]
            return
        try:
            with open(os.path.join(path, "summary.json")) as f:
                self.summary = json.load(f)
        except OSError:
            self.failed = "no summary.json (still running, or not copied)"
            return
        except ValueError as err:
            self.failed = "summary.json does not parse (%s)" % err
            return
        if self.summary.get("complete") is False:
            self.failed = "summary.json says complete: false"
            return
        # a sweep's configuration directory has no reproduce-run.json; an
        # example's repetition has one
        for meta in (os.path.join(path, "reproduce-run.json"), os.path.join(os.path.dirname(path), "reproduce-run.json")):
            try:
                with open(meta) as f:
                    self.scale = float(json.load(f)["time_scale"])
                break
            except (OSError, ValueError, KeyError, TypeError):
                continue

    def value(self, col, names):
        if "events" in col:
            return event_span(self.path, col["events"])
        if "event_numbers" in col:
            return event_numbers(self.path, col["event_numbers"], self.summary, names)
        key = col["key"].format(**names)
        v = lookup(self.summary, key)
        if col.get("mode"):
            return str(v)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise Missing("%s is %r, not a number" % (key, v))
        v = float(v)
        if "per" in col:
            per = col["per"].format(**names)
            d = lookup(self.summary, per)
            if not d:
                raise Missing("%s is 0" % per)
            v /= float(d)
        if col.get("unscale"):
            if not self.scale:
                raise Missing("no time_scale in reproduce-run.json")
            v /= self.scale
        return v * col.get("factor", 1)


def repetitions(root, row):
    """The row's repetitions, r1, r2, ... in order."""
    base = os.path.join(root, row["run"])
    try:
        names = [n for n in os.listdir(base) if n[:1] == "r" and n[1:].isdigit()]
    except OSError:
        return []
    names.sort(key=lambda n: int(n[1:]))
    if "config" in row:
        paths = [os.path.join(base, n, "cfg-%04d-r1" % row["config"]) for n in names]
    else:
        paths = [os.path.join(base, n) for n in names]
    return [Repetition(root, p) for p in paths]


def fmt_number(v, fmt):
    if fmt in FORMATS:
        return FORMATS[fmt]["number"](v)
    return (fmt or "{:g}").format(v)


def median(xs):
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def aggregate(values, col):
    """The cell text for one column over the repetitions' values."""
    if col.get("mode"):
        counts, best = {}, None
        for v in values:
            counts[v] = counts.get(v, 0) + 1
            if best is None or counts[v] > counts[best]:
                best = v
        others = ", ".join("%s ×%d" % (k, counts[k]) for k in sorted(counts) if k != best)
        return "%s (%d of %d%s)" % (best, counts[best], len(values), "; " + others if others else "")
    fmt = col.get("fmt")
    unit = FORMATS[fmt]["unit"] if fmt in FORMATS else ""
    if any(math.isnan(x) for x in values):
        return "–"
    mid, lo, hi = (fmt_number(x, fmt) for x in (median(values), min(values), max(values)))
    if lo == hi:
        return mid + unit
    return "%s%s (%s–%s)" % (mid, unit, lo, hi)


SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


class Notes:
    """Numbered notes under a table, one per distinct text."""

    def __init__(self):
        self.texts = []

    def mark(self, text):
        if text not in self.texts:
            self.texts.append(text)
        return str(self.texts.index(text) + 1).translate(SUPERSCRIPT)


def cell(col, row, reps, notes):
    names = row.get("vars", {})
    if "text" in col:
        return col["text"].format(**names)
    if not reps:
        return "–" + notes.mark("%s: not in this directory (not run yet, or not copied)" % row["run"])
    values, why = [], {}
    for rep in reps:
        if rep.failed:
            problem = rep.failed
        else:
            try:
                values.append(rep.value(col, names))
                continue
            except Missing as err:
                problem = col.get("missing") or str(err)
        why.setdefault(problem, []).append(os.path.relpath(rep.path, os.path.join(rep.root, row["run"])))
    left_out = "" if not values else " (left out of the cell)"
    marks = [notes.mark("%s (%s): %s%s" % (row["run"], ", ".join(which), problem, left_out))
             for problem, which in why.items()]
    return (aggregate(values, col) if values else "–") + ",".join(marks)


def render(spec, root):
    notes = Notes()
    heads = list(spec["labels"]) + [c["head"] for c in spec["columns"]]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    previous = None
    for row in spec["rows"]:
        reps = repetitions(root, row)
        labels = list(row["labels"])
        if len(labels) > 1 and labels[0] == previous:
            labels[0] = ""
        else:
            previous = labels[0]
        cells = labels + [cell(c, row, reps, notes) for c in spec["columns"]]
        lines.append("| " + " | ".join(cells) + " |")
    if notes.texts:
        lines.append("")
        lines.extend("%s %s  " % (str(i + 1).translate(SUPERSCRIPT), t) for i, t in enumerate(notes.texts))
        lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)


def usage(out):
    out.write(__doc__.split("\n\n")[1] + "\n")


def main(argv):
    args = [a for a in argv if a not in ("-h", "--help")]
    if len(args) != len(argv):
        print(__doc__.strip())
        return 0
    if not args or len(args) > 2:
        usage(sys.stderr)
        return 2
    root = args[0] if len(args) == 2 else DEFAULT_DIR
    what = args[-1]
    if what == "--list":
        for name, spec in TABLES.items():
            experiments = sorted({"/".join(row["run"].split("/")[:2]) for row in spec["rows"]})
            print("%s\n    %s\n    reads %s" % (name, spec["what"], ", ".join(experiments)))
        return 0
    if what not in TABLES:
        sys.stderr.write("tables.py: no table %r; one of: %s\n" % (what, ", ".join(TABLES)))
        return 2
    if not os.path.isdir(root):
        sys.stderr.write("tables.py: %s is not a directory (a `faultbench reproduce` results directory)\n" % root)
        return 2
    print(render(TABLES[what], root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
