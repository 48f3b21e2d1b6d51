#!/usr/bin/env python3
"""Markdown tables from a `faultbench reproduce` results directory.

    python3 bench/reproduce/tables.py [DIR] TABLE     # DIR: default docs/results/reproduce
    python3 bench/reproduce/tables.py [DIR] --list    # the tables, and which runs they read
    python3 bench/reproduce/tables.py [DIR] claims:PAPER[:PREFIX,...]   # a paper's claims from DIR/reproduce.json

The docs' measured tables are printed by this script from the committed
run (docs/papers.md, "Reproducing a paper"), so that every number they
quote can be checked against a file. DIR holds runs as
DIR/PAPER/EXPERIMENT/RUN/rN/ (an example's repetitions) or
DIR/PAPER/EXPERIMENT/SWEEP/rN/cfg-NNNN-r1/ (a sweep's configuration N,
the whole sweep in DIR/PAPER/EXPERIMENT/SWEEP/rN/sweep.json).

Each cell is the median over the repetitions, with the range in
parentheses where the repetitions differ once formatted
("0.874 (0.861–0.880)"); a text cell such as a behaviour class is the most
frequent value, ties to the first repetition's, with the others counted
("C-1 (2 of 3; B ×1)", as `faultbench reproduce` writes it). A run or a
value that is missing or failed is "–" or is counted without, with a
numbered note under the table; the script never stops on missing data.

A table is data, in TABLES below: rows name runs, columns name summary.json
key paths and their formatting. To add one (RAID, ...), add an entry;
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
#   run      read this run instead of the row's (with the row's config),
#            "{name}" replaced from the row's vars: one table row across
#            several sweeps, or across the runs of several experiments
#   per_run  {"run": RUN, "key": PATH}: the cell is key / that path in the
#            same repetition (rN) of another run ("{name}" replaced in
#            both), as a claim's measure with per (ling04's latency ratios)
#   per_param
#            a sweep's grid key: the cell is key / the configuration's value
#            of it (sweep.json's params; throughput per user)
#   events   {"from": KIND, "to": KIND}: seconds from the first event of kind
#            from to the first of kind to after it (events.jsonl), as the
#            reproduce claims measure it; "detail": TEXT takes only a to
#            event whose detail holds TEXT; "each": "max" or "min": of every
#            from event, the seconds to the first to after it and before
#            the next from, the largest or smallest (one never answered is
#            left out)
#   drop     {"from": KIND, "to": KIND}: the worst window's fall between the
#            first from event and the first to after it, as the reproduce
#            measure drop: (baseline.mean − the lowest ok/s of the valid
#            windows lying wholly inside the span) ÷ baseline.mean
#   answered {"from": KIND, "to": KIND}: the share of the from events that a
#            to event followed before the next from (measure answered)
#   falls, largest, peak
#            a sweep's reading, as the measures of the same names: falls
#            {"param", "key", "at_most"}: the smallest grid value past the
#            peak's at which key is at most at_most × the peak; largest
#            {"param", "key", "per_param", "at_least" or "at_most"}: the
#            largest grid value below the smallest that misses the bound (a
#            capacity); peak {"param", "key", "value": "peak" or "at"}: the
#            largest key, or the grid value where it is; such a column
#            reads the run's rN/sweep.json
#   event_numbers
#            {"kind": KIND, "after": KIND, "between": [KEY, KEY], "value": V}:
#            the events of that kind (after the first event of kind after;
#            at times from the first key's value to the second's), and V one
#            of count, or sum, first, max of the first number in each detail
#   sweep_key
#            a path into the run's rN/sweep.json, whose parts may select a
#            list's element by a field, as the reproduce measures do:
#            "outlier_breakdown[key=cluster.options.style].values[value=passive].share"
#   text     the cell is this text, "{name}" replaced from the row's vars
#            (published values beside the measured ones)
#   mode     True: the values are texts; the cell is the most frequent
#   missing  what the note says when a repetition lacks the key
# A row:
#   labels   the first cells (the table's "labels" headers); a first label
#            equal to the row above's is left blank, as the docs write it
#   run      the run's directory under DIR, holding r1, r2, ...; a row
#            whose columns all name their run, or are text, needs none
#   config   a sweep configuration: repetitions are rN/cfg-NNNN-r1
#   cells    instead of a run, the cells as written (a paper's values in
#            a row of their own)
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

def _phase_rows(run, phases):
    """A row per phase ("{p}" in the columns' keys), the whole run last."""
    return [{"labels": [label], "run": run, "vars": {"p": "phases." + phase if phase else "overall"}}
            for label, phase in phases]


# Sub-millisecond waits, as docs/ssm.md's §6 table writes them.
_MS2 = {"factor": 1000, "fmt": "{:.2f}"}

# ling04's sweeps: a closed-loop count of machines (clients of 12 users)
# or of users per configuration, the run's whole (one-phase) period.
_MACHINE_COLUMNS = [
    {"head": "goodput (ok/s)", "key": "overall.throughput_mean_per_s", "fmt": "{:.1f}"},
    {"head": "requests/s", "key": "overall.offered_per_s", "fmt": "{:.0f}"},
    {"head": "ok ÷ requests", "key": "overall.goodput", "fmt": "{:.3f}"},
    {"head": "mean latency", "key": "overall.latency_mean_s", "fmt": "ms"},
]
_MACHINES = {"param": "workload.clients", "key": "throughput_mean_per_s"}
_CAPACITY = {"param": "workload.users", "key": "throughput_mean_per_s", "per_param": True, "at_least": 0.3233}
_APP_CAPACITY = "ling04/app-capacity-%s/ssm-app-capacity-%s"

# Brown and Patterson (2000) Table 1: its rows as docs/raid.md writes them,
# the runs' fault names, and the paper's classes (Linux / Solaris / Windows
# 2000, as brown00.yaml publishes them).
_RAID_TABLE1 = [
    ("Correctable read, transient", "read-correctable-transient", "C-1 / A / A"),
    ("Correctable read, sticky", "read-correctable-sticky", "C-1 / A / A"),
    ("Uncorrectable read, transient", "read-uncorrectable-transient", "C-1 / A / A"),
    ("Uncorrectable read, sticky", "read-uncorrectable-sticky", "C-1 / C-2 / B"),
    ("Correctable write, transient", "write-correctable-transient", "C-1 / A / A"),
    ("Correctable write, sticky", "write-correctable-sticky", "C-1 / A / A"),
    ("Uncorrectable write, transient", "write-uncorrectable-transient", "C-1 / A / B"),
    ("Uncorrectable write, sticky", "write-uncorrectable-sticky", "C-1 / C-2 / B"),
    ("Hardware error, transient", "hw-error-transient", "C-1 / A / A"),
    ("Illegal command, transient", "illegal-command-transient", "C-1 / C-2 / A"),
    ("Disk hang on read", "hang-read", "D / D / D"),
    ("Disk hang on write", "hang-write", "D / D / D"),
    ("Disk hang, not on a command", "hang-idle", "D / D / D"),
    ("Power failure during command", "power-fail", "C-1 / C-2 / B"),
    ("Physical removal of active disk", "remove", "C-1 / C-2 / B"),
]
# Each Table 1 column's runs: the experiment and the examples' suffix.
_RAID_SETS = [("paranoid (Linux)", "table1-linux", "paranoid"),
              ("tolerant (Solaris)", "table1-solaris", "tolerant"),
              ("windows2000 set", "table1-windows2000", "windows2000")]

_RECONSTRUCTION = [("Linux-like (low, automatic)", "linux"), ("Solaris-like (high, automatic)", "solaris"),
                   ("Windows-like (adaptive, manual)", "windows")]
_REBUILD = {"from": "system.raid.reconstruction.started", "to": "system.raid.reconstruction.finished"}
_DOUBLE_FAILURE = [("threshold (the original example)", "double-failure/raid-macro-double-failure"),
                   ("linux set", "double-failure-by-set/raid-macro-double-failure-linux"),
                   ("solaris set", "double-failure-by-set/raid-macro-double-failure-solaris"),
                   ("windows2000 set", "double-failure-by-set/raid-macro-double-failure-windows2000")]
_NO_RECOVERY = "no recovery phase: the solaris set's administrator has no step to take"

_MAGICAL = "dumitras05/magical-1pct/magical-1pct"
# Dumitras and Narasimhan (2005) Table 1: the parameter values of the
# reduced grid and the paper's share of the outliers for each.
_MAGICAL_TABLE1 = [
    ("style", "cluster.options.style", [("active", "active", "55.12%"), ("passive", "passive", "44.88%")]),
    ("degree", "cluster.options.w", [("1", "1", "28.51%"), ("2", "2", "34.47%"), ("3", "3", "37.02%")]),
    ("clients", "workload.clients", [("1", "1", "9.26%"), ("4", "4", "15.06%"), ("10", "10", "14.77%")]),
    ("pause", "workload.think", [("0", "0", "21.37%"), ("2 ms", "fixed(2ms)", "20.50%"),
                                 ("32 ms", "fixed(32ms)", "17.28%")]),
    ("reply size", "cluster.options.state_size", [("16 B", "16", "13.77%"), ("4 KB", "4096", "21.14%"),
                                                  ("64 KB", "65536", "52.99%")]),
]
_BREAKDOWN = "outlier_breakdown[key={key}].values[value={value}]."

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
    "press-fault-table": {
        "what": "docs/press.md's fault table, measured: each remaining fault of Nagaraja et al. (2002) Table 3 "
                "and the network faults on perf, ha and robust (experiment nagaraja02/fault-table; docs/press.md, "
                "Which faults each mode contains)",
        "labels": ["fault", "mode"],
        "columns": [
            {"head": "class", "key": "faults.0.class", "mode": True},
            {"head": "failure duration", "key": "faults.0.failure_duration_s", "unscale": True, "fmt": "{:.0f}"},
            {"head": "fault-phase throughput", "key": "phases.fault.throughput_mean_per_s", "per": "baseline.mean",
             "fmt": "{:.2f}"},
            {"head": "goodput", "key": "overall.goodput", "fmt": "{:.3f}"},
            {"head": "data_error", "key": "overall.outcomes.data_error", "fmt": "{:.0f}"},
        ],
        "rows": [{"labels": [f, m], "run": "nagaraja02/fault-table/press-%s-%s" % (m, f)}
                 for f in ("switch-down", "mem-alloc-fail", "bad-param-null", "bad-param-offset", "bad-param-size",
                           "partition", "delay", "loss", "slow")
                 for m in ("perf", "ha", "robust")],
    },
    "ssm-brick-kill": {
        "what": "Ling et al. (2004) §5.1, Fig. 7: a brick killed and restarted empty under 450 requests/s, "
                "per phase (docs/ssm.md, Results)",
        "labels": ["phase"],
        "columns": [
            {"head": "requests", "key": "{p}.attempts", "fmt": "{:.0f}"},
            {"head": "ok", "key": "{p}.outcomes.ok", "fmt": "{:.0f}"},
            {"head": "data_error", "key": "{p}.outcomes.data_error", "fmt": "{:.0f}"},
            {"head": "ok/s", "key": "{p}.throughput_mean_per_s", "fmt": "{:.1f}"},
            {"head": "p99 latency", "key": "{p}.latency_p99_s", "fmt": "ms"},
        ],
        "rows": _phase_rows("ling04/brick-kill/ssm-brick-kill",
                            [("warm-up", "warmup"), ("brick 3 down", "fault"), ("restarted", "post"),
                             ("whole run", "")]),
    },
    "ssm-overload": {
        "what": "Ling et al. (2004) §5.2, Fig. 9: the basic system (no AIMD, no discard) offered 900 "
                "requests/s, per phase (docs/ssm.md, Results)",
        "labels": ["phase"],
        "columns": [
            {"head": "offered/s", "key": "{p}.offered_per_s", "fmt": "{:.0f}"},
            {"head": "goodput (ok/s)", "key": "{p}.throughput_mean_per_s", "fmt": "{:.1f}"},
            {"head": "ok ÷ requests", "key": "{p}.goodput", "fmt": "{:.3f}"},
            {"head": "HTTP errors (503)", "key": "{p}.outcomes.http_error", "fmt": "{:.0f}"},
            {"head": "mean latency", "key": "{p}.latency_mean_s", "fmt": "ms"},
        ],
        "rows": _phase_rows("ling04/overload/ssm-overload-basic", [("warm-up", "warmup"), ("overload", "overload")]),
    },
    "ssm-overload-machines-basic": {
        "what": "Ling et al. (2004) §5.3, Fig. 11: goodput against load-generating machines (12 hyperactive "
                "users each), the basic system (docs/ssm.md, §5.3)",
        "labels": ["machines"],
        "columns": _MACHINE_COLUMNS,
        "rows": _sweep_rows("ling04/overload-machines-basic/ssm-overload-basic-machines",
                            ["1", "2", "3", "4", "6"]),
    },
    "ssm-overload-machines-aimd": {
        "what": "Ling et al. (2004) §5.3, Fig. 12: the same against the self-protecting system "
                "(AIMD + admission control, expired requests dropped) (docs/ssm.md, §5.3)",
        "labels": ["machines"],
        "columns": _MACHINE_COLUMNS,
        "rows": _sweep_rows("ling04/overload-machines-aimd/ssm-overload-aimd-machines",
                            ["1", "8", "16", "24", "32", "40", "48", "56", "64", "80", "96", "112", "128", "160"]),
    },
    "ssm-overload-machines": {
        "what": "Ling et al. (2004) Figs. 11-12: each sweep's peak goodput and where it halves and is zero "
                "(measure falls, as claims fig11-half-goodput, fig12-*), beside the paper's (docs/ssm.md, §5.3)",
        "labels": [""],
        "columns": [
            {"head": "peak goodput (ok/s)", "fmt": "{:.1f}", "peak": _MACHINES},
            {"head": "at (machines)", "fmt": "{:.0f}", "peak": dict(_MACHINES, value="at")},
            {"head": "halves at", "fmt": "{:.0f}", "falls": dict(_MACHINES, at_most=0.5)},
            {"head": "zero at", "fmt": "{:.0f}", "falls": dict(_MACHINES, at_most=0.05)},
        ],
        "rows": [
            {"labels": ["basic, paper (Fig. 11)"], "cells": ["", "", "13", "14"]},
            {"labels": ["basic, measured"], "run": "ling04/overload-machines-basic/ssm-overload-basic-machines"},
            {"labels": ["protected, paper (Fig. 12)"], "cells": ["", "", "24", "37"]},
            {"labels": ["protected, measured"], "run": "ling04/overload-machines-aimd/ssm-overload-aimd-machines"},
        ],
    },
    "ssm-pinpoint": {
        "what": "Ling et al. (2004) §5.5-5.8: Pinpoint against a stack bit flip, a value bit flip, 70% packet "
                "loss and a slow brick: when the brick exits and is restarted, and the requests (docs/ssm.md)",
        "labels": ["section", "run"],
        "columns": [
            {"head": "brick exits after the fault (s)", "fmt": "{:.2f}",
             "events": {"from": "fault.inject", "to": "node.down", "detail": "exited"},
             "missing": "the brick does not exit: it runs on, slowed or behind lossy links"},
            {"head": "restarted after the fault (s)", "fmt": "{:.1f}",
             "events": {"from": "fault.inject", "to": "system.pinpoint.restart"}},
            {"head": "restarts", "fmt": "{:.0f}", "event_numbers": {"kind": "system.pinpoint.restart", "value": "count"}},
            {"head": "requests", "key": "overall.attempts", "fmt": "{:.0f}"},
            {"head": "ok", "key": "overall.outcomes.ok", "fmt": "{:.0f}"},
            {"head": "data_error", "key": "overall.outcomes.data_error", "fmt": "{:.0f}"},
            {"head": "warm-up mean latency", "key": "phases.warmup.latency_mean_s", "fmt": "ms"},
            {"head": "fault-phase mean latency", "key": "phases.fault.latency_mean_s", "fmt": "ms"},
        ],
        "rows": [{"labels": [section, run], "run": "ling04/pinpoint/" + run}
                 for section, run in (("§5.5", "ssm-bitflip-stack-pinpoint"), ("§5.6", "ssm-bitflip-pinpoint"),
                                      ("§5.7", "ssm-loss-pinpoint"), ("§5.8", "ssm-slow-pinpoint"))],
    },
    "ssm-slow-repeated": {
        "what": "Ling et al. (2004) §5.8, Fig. 16: the slow brick every 60 s, the share of slowdowns "
                "Pinpoint answered with a restart (measure answered) and how soon (docs/ssm.md, §5.8)",
        "labels": ["run"],
        "columns": [
            {"head": "slowdowns", "fmt": "{:.0f}", "event_numbers": {"kind": "fault.inject", "value": "count"}},
            {"head": "share restarted", "fmt": "{:.2f}",
             "answered": {"from": "fault.inject", "to": "system.pinpoint.restart"}},
            {"head": "restarts", "fmt": "{:.0f}", "event_numbers": {"kind": "system.pinpoint.restart", "value": "count"}},
            {"head": "soonest restart (s)", "fmt": "{:.1f}",
             "events": {"from": "fault.inject", "to": "system.pinpoint.restart", "each": "min"}},
            {"head": "latest restart (s)", "fmt": "{:.1f}",
             "events": {"from": "fault.inject", "to": "system.pinpoint.restart", "each": "max"}},
            {"head": "requests", "key": "overall.attempts", "fmt": "{:.0f}"},
            {"head": "ok", "key": "overall.outcomes.ok", "fmt": "{:.0f}"},
            {"head": "data_error", "key": "overall.outcomes.data_error", "fmt": "{:.0f}"},
        ],
        "rows": [{"labels": ["ssm-slow-repeated-pinpoint"], "run": "ling04/slow-repeated/ssm-slow-repeated-pinpoint"}],
    },
    "ssm-app": {
        "what": "Ling et al. (2004) §6: the session front end over memory, file and SSM, crashed at 15 s "
                "and restarted: latency before and after, sessions lost (docs/ssm.md, §6)",
        "labels": ["backend"],
        "columns": [
            dict(_MS2, head="warm-up mean (ms)", key="phases.warmup.latency_mean_s"),
            dict(_MS2, head="warm-up p99 (ms)", key="phases.warmup.latency_p99_s"),
            dict(_MS2, head="after the restart: mean (ms)", key="phases.post.latency_mean_s"),
            dict(_MS2, head="p99 (ms)", key="phases.post.latency_p99_s"),
            {"head": "lost sessions (data_error)", "key": "overall.outcomes.data_error", "fmt": "{:.0f}"},
            {"head": "refused while down (conn_error)", "key": "phases.fault.outcomes.conn_error", "fmt": "{:.0f}"},
            {"head": "refused after", "key": "phases.post.outcomes.conn_error", "fmt": "{:.0f}"},
            {"head": "requests", "key": "overall.attempts", "fmt": "{:.0f}"},
        ],
        "rows": [{"labels": [label], "run": "ling04/app/ssm-app-" + b}
                 for label, b in (("memory", "memory"), ("file (fsync per write)", "file"), ("ssm (3 bricks)", "ssm"))],
    },
    "ssm-app-ratios": {
        "what": "Ling et al. (2004) §6: warm-up mean latency of one back end over another's, repetition by "
                "repetition (claims app-ssm-vs-memory-latency, app-file-vs-ssm-latency; docs/ssm.md, §6)",
        "labels": ["ratio"],
        "columns": [
            {"head": "warm-up mean latency", "key": "phases.warmup.latency_mean_s", "fmt": "{:.2f}",
             "per_run": {"run": "ling04/app/ssm-app-{over}", "key": "phases.warmup.latency_mean_s"}},
            {"head": "the paper", "text": "{paper}"},
        ],
        "rows": [
            {"labels": ["ssm ÷ memory"], "run": "ling04/app/ssm-app-ssm",
             "vars": {"over": "memory", "paper": "1.09 (0.863 s / 0.793 s: 'roughly equal')"}},
            {"labels": ["file ÷ ssm"], "run": "ling04/app/ssm-app-file",
             "vars": {"over": "ssm", "paper": "more than 2"}},
        ],
    },
    "ssm-app-capacity": {
        "what": "Ling et al. (2004) §6: requests/s per user (throughput ÷ users) of closed-loop users with 3 s "
                "think time, sessions in memory, a file and SSM (docs/ssm.md, §6 capacity in users)",
        "labels": ["users"],
        "columns": [{"head": b, "run": _APP_CAPACITY % (b, b), "key": "overall.throughput_mean_per_s",
                     "per_param": "workload.users", "fmt": "{:.3f}"} for b in ("memory", "file", "ssm")],
        "rows": _sweep_rows(_APP_CAPACITY % ("memory", "memory"),
                            ["1,000", "2,000", "3,000", "4,000", "6,000", "8,000", "12,000", "16,000",
                             "24,000", "32,000"]),
    },
    "ssm-app-capacity-outcomes": {
        "what": "Ling et al. (2004) §6: what each back end does with 8,000 and 16,000 closed-loop users: "
                "requests served and sent per second, latency, and how the rest failed (docs/ssm.md, §6)",
        "labels": ["backend", "users"],
        "columns": [
            {"head": "ok/s", "key": "overall.throughput_mean_per_s", "fmt": "{:.0f}"},
            {"head": "requests/s", "key": "overall.offered_per_s", "fmt": "{:.0f}"},
            {"head": "mean latency", "key": "overall.latency_mean_s", "fmt": "ms"},
            {"head": "timeouts", "key": "overall.outcomes.timeout", "fmt": "{:.0f}"},
            {"head": "HTTP errors (503)", "key": "overall.outcomes.http_error", "fmt": "{:.0f}"},
            {"head": "conn_abort", "key": "overall.outcomes.conn_abort", "fmt": "{:.0f}"},
            {"head": "requests", "key": "overall.attempts", "fmt": "{:.0f}"},
        ],
        "rows": [{"labels": [b, users], "run": _APP_CAPACITY % (b, b), "config": config}
                 for b in ("memory", "file", "ssm") for users, config in (("8,000", 6), ("16,000", 8))],
    },
    "ssm-app-capacity-users": {
        "what": "Ling et al. (2004) §6: the most users each back end keeps up with (throughput ÷ users ≥ "
                "0.3233/s there and below; measure largest, claims app-capacity-*) (docs/ssm.md, §6)",
        "labels": ["backend"],
        "columns": [
            {"head": "capacity (users)", "fmt": "{:,.0f}", "largest": _CAPACITY},
            {"head": "the paper", "text": "{paper}"},
        ],
        "rows": [{"labels": [b], "run": _APP_CAPACITY % (b, b), "vars": {"paper": paper}}
                 for b, paper in (("memory", "160"), ("file", "120"), ("ssm", "120"))],
    },
    "raid-table1": {
        "what": "Brown and Patterson (2000) Table 1: the class of each disk fault under the Linux, Solaris and "
                "Windows 2000 columns' policies, beside the paper's (claims t1-*; docs/raid.md, Table 1)",
        "labels": ["fault (Table 1 row)"],
        "columns": [{"head": head, "run": "brown00/%s/raid-micro-{fault}-%s" % (experiment, suffix),
                     "key": "faults.0.class", "mode": True} for head, experiment, suffix in _RAID_SETS]
                   + [{"head": "paper: Linux / Solaris / Win2k", "text": "{paper}"}],
        "rows": [{"labels": [label], "vars": {"fault": fault, "paper": paper}} for label, fault, paper in _RAID_TABLE1],
    },
    "raid-reconstruction": {
        "what": "Brown and Patterson (2000) §4.2 scenario 1: the first rebuild under each policy, with an "
                "open-loop load at half the knee (experiment reconstruction) and with closed-loop users at "
                "saturation (reconstruction-saturated) (claims rebuild-*, lower-load-*; docs/raid.md)",
        "labels": ["policy", "load"],
        "columns": [
            {"head": "offered/s", "key": "overall.offered_per_s", "fmt": "{:.0f}"},
            {"head": "warm-up ok/s", "key": "baseline.mean", "fmt": "{:.0f}"},
            {"head": "first rebuild (s)", "fmt": "{:.1f}", "events": _REBUILD},
            {"head": "worst drop during it", "fmt": "pct", "drop": _REBUILD},
            {"head": "first failure's class", "key": "faults.0.class", "mode": True},
            {"head": "goodput", "key": "overall.goodput", "fmt": "{:.4f}"},
            {"head": "data_error", "key": "overall.outcomes.data_error", "fmt": "{:.0f}"},
        ],
        "rows": [{"labels": [label, load], "run": "brown00/%s/raid-macro-reconstruction-%s%s" % (experiment, closed, p)}
                 for label, p in _RECONSTRUCTION
                 for load, experiment, closed in (("open loop, half the knee", "reconstruction", ""),
                                                  ("closed loop, saturated", "reconstruction-saturated", "closed-"))],
    },
    "raid-double-failure": {
        "what": "Brown and Patterson (2000) §4.2 scenario 2: a live disk pulled during the rebuild, under the "
                "threshold policy and each system's policy set: what the clients got while two members were out "
                "(phase outage) and after the administrator's steps (phase recovery) (claims double-failure-*; "
                "docs/raid.md)",
        "labels": ["policy"],
        "columns": [
            {"head": "offered/s", "key": "overall.offered_per_s", "fmt": "{:.0f}"},
            {"head": "outage: goodput", "key": "phases.outage.goodput", "fmt": "{:.3f}"},
            {"head": "ok", "key": "phases.outage.outcomes.ok", "fmt": "{:.0f}"},
            {"head": "503", "key": "phases.outage.outcomes.http_error", "fmt": "{:.0f}"},
            {"head": "data_error", "key": "phases.outage.outcomes.data_error", "fmt": "{:.0f}"},
            {"head": "recovery: goodput", "key": "phases.recovery.goodput", "fmt": "{:.4f}", "missing": _NO_RECOVERY},
            {"head": "503", "key": "phases.recovery.outcomes.http_error", "fmt": "{:.0f}", "missing": _NO_RECOVERY},
        ],
        "rows": [{"labels": [label], "run": "brown00/" + run} for label, run in _DOUBLE_FAILURE],
    },
    "magical-table1": {
        "what": "Dumitras and Narasimhan (2005) Table 1: the share of all two-sided 3σ outliers that fell in "
                "configurations with each value, beside that value's share of the samples, SSM's reduced grid "
                "(claims outliers-64k-replies, passive-replication; docs/magical-1pct.md)",
        "labels": ["parameter", "value"],
        "columns": [
            {"head": "share of the outliers", "sweep_key": _BREAKDOWN + "share", "fmt": "pct"},
            {"head": "share of the samples", "sweep_key": _BREAKDOWN + "samples_share", "fmt": "pct"},
            {"head": "paper, Table 1", "text": "{paper}"},
        ],
        "rows": [{"labels": [label, shown], "run": _MAGICAL, "vars": {"key": key, "value": value, "paper": paper}}
                 for label, key, values in _MAGICAL_TABLE1 for shown, value, paper in values],
    },
    "magical-fig2b": {
        "what": "Dumitras and Narasimhan (2005) Fig. 2(b): how many configurations have how many two-sided 3σ "
                "outliers (claim outliers-under-1pct; docs/magical-1pct.md)",
        "labels": ["outliers"],
        "columns": [
            {"head": "configurations", "sweep_key": "outlier_histogram[label={label}].configs", "fmt": "{:.0f}"},
            {"head": "share", "sweep_key": "outlier_histogram[label={label}].fraction", "fmt": "pct"},
        ],
        "rows": [{"labels": [label], "run": _MAGICAL, "vars": {"label": label}}
                 for label in ("<1%", "1-2%", "2-3%", "3-4%", ">=4%")],
    },
    "magical-haircut": {
        "what": "Dumitras and Narasimhan (2005) §3 and Fig. 3: over the configurations, the median of max ÷ mean "
                "and of p99 ÷ mean, and the share that pass the 3σ test once their top 1% is dropped "
                "(claim conform-after-trim; docs/magical-1pct.md)",
        "labels": ["sweep"],
        "columns": [
            {"head": "configurations", "sweep_key": "runs", "fmt": "{:.0f}"},
            {"head": "failed", "sweep_key": "runs_failed", "fmt": "{:.0f}"},
            {"head": "max ÷ mean (median)", "sweep_key": "max_over_mean_median", "fmt": "{:.1f}"},
            {"head": "p99 ÷ mean (median)", "sweep_key": "p99_over_mean_median", "fmt": "{:.1f}"},
            {"head": "conform after the 1% trim", "sweep_key": "conform_after_1pct_trim_fraction", "fmt": "pct"},
        ],
        "rows": [{"labels": ["magical-1pct (reduced grid)"], "run": _MAGICAL}],
    },
    "raid-table1-hangs": {
        "what": "Brown and Patterson (2000) Table 1's three hangs under each column's policies: when the disk is "
                "taken out, its rebuild, and the requests that failed (docs/raid.md, Table 1)",
        "labels": ["hang", "column"],
        "columns": [
            {"head": "class", "key": "faults.0.class", "mode": True},
            {"head": "disk timeouts", "fmt": "{:.0f}", "event_numbers": {"kind": "system.raid.disk.error", "value": "count"}},
            {"head": "disk out after (s)", "fmt": "{:.1f}",
             "events": {"from": "fault.inject", "to": "system.raid.disk.failed"}},
            {"head": "rebuild (s)", "fmt": "{:.1f}",
             "events": {"from": "system.raid.reconstruction.started", "to": "system.raid.reconstruction.finished"},
             "missing": "no rebuild: the windows2000 set waits for the administrator, who does nothing here"},
            {"head": "timed out", "key": "overall.outcomes.timeout", "fmt": "{:.0f}"},
            {"head": "refused (503)", "key": "overall.outcomes.http_error", "fmt": "{:.0f}"},
        ],
        "rows": [{"labels": [label, head], "run": "brown00/%s/raid-micro-%s-%s" % (experiment, fault, suffix)}
                 for label, fault, _ in _RAID_TABLE1 if fault.startswith("hang-")
                 for head, experiment, suffix in _RAID_SETS],
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


_SELECT = re.compile(r"([^\[]+)\[([^=\]]+)=([^\]]*)\]")


def split_path(path):
    """Dotted parts, a dot inside [...] not splitting."""
    parts, cur, depth = [], "", 0
    for ch in path:
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return parts


def lookup(doc, path):
    """Follows a dotted path, as the reproduce measures read one: a key
    holding dots ("0.1") is matched whole, a number indexes a list, and
    name[field=value] takes the element of the list doc[name] whose field
    reads value ("outlier_breakdown[key=cluster.options.style].values[value=passive].share")."""
    parts = split_path(path)
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
            m = _SELECT.fullmatch(name)
            key = m.group(1) if m else name
            if key not in cur:
                continue
            cur, i = cur[key], j
            if m:
                field, want = m.group(2), m.group(3)
                found = [e for e in (cur or []) if isinstance(e, dict) and str(e.get(field)) == want]
                if not found:
                    raise Missing("no %s with %s=%s" % (key, field, want))
                cur = found[0]
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


def span_bounds(rep, span):
    """The first from event's time and the first to event's after it (one
    whose detail holds span's "detail", when given)."""
    start, detail = None, span.get("detail", "")
    for t, kind, text in read_events(rep):
        if start is None:
            if kind == span["from"]:
                start = t
        elif kind == span["to"] and detail in text:
            return start, t
    if start is None:
        raise Missing("no %s event" % span["from"])
    raise Missing("no %s event%s after %s" % (span["to"], " saying %r" % detail if detail else "", span["from"]))


def event_span(rep, span):
    if "each" in span:
        return each_span(rep, span)
    start, end = span_bounds(rep, span)
    return end - start


def each_span(rep, span):
    """The largest or smallest, over the from events, of the seconds to
    the first to event after it and before the next from."""
    spans, start = [], None
    for t, kind, text in read_events(rep):
        if kind == span["from"]:
            start = t
        elif kind == span["to"] and start is not None and span.get("detail", "") in text:
            spans.append(t - start)
            start = None
    if not spans:
        raise Missing("no %s event answered by a %s" % (span["from"], span["to"]))
    return {"max": max, "min": min}[span["each"]](spans)


def window_drop(rep, span, summary):
    """The worst window's fall during span, as internal/reproduce's
    windowDrop: windows the span only touches are left out."""
    start, end = span_bounds(rep, span)
    mean, width = lookup(summary, "baseline.mean"), lookup(summary, "run.window_s")
    if not mean or not width:
        raise Missing("baseline.mean or run.window_s is 0")
    lowest = None
    try:
        with open(os.path.join(rep, "windows.csv")) as f:
            head = f.readline().strip().split(",")
            at = {name: i for i, name in enumerate(head)}
            for line in f:
                cells = line.strip().split(",")
                t0 = float(cells[at["t_start_s"]])
                if cells[at["valid"]] != "1" or t0 < start or t0 + width > end:
                    continue
                ok = float(cells[at["throughput_ok_per_s"]])
                lowest = ok if lowest is None else min(lowest, ok)
    except (OSError, KeyError, ValueError, IndexError) as err:
        raise Missing("windows.csv unreadable (%s)" % err)
    if lowest is None:
        raise Missing("no valid window lies wholly inside %s → %s" % (span["from"], span["to"]))
    return (mean - lowest) / mean


def answered(rep, span):
    """The share of the from events that a to event followed before the
    next from or the end (reproduce's measure answered)."""
    froms = hits = 0
    pending = False
    for _, kind, _ in read_events(rep):
        if kind == span["from"]:
            froms += 1
            pending = True
        elif kind == span["to"] and pending:
            hits += 1
            pending = False
    if not froms:
        raise Missing("no %s event" % span["from"])
    return hits / froms


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


def grid_points(sweep, param, key, per_param=False):
    """(grid value, value at key) of every configuration of a sweep.json,
    key divided by the grid value with per_param."""
    points = []
    for i, c in enumerate(sweep.get("configs") or []):
        try:
            x = float(c["params"][param])
        except (KeyError, TypeError, ValueError):
            raise Missing("configs.%d: grid key %s is not a number" % (i, param))
        try:
            v = float(lookup(c, key))
        except (TypeError, ValueError):
            raise Missing("configs.%d: %s is not a number" % (i, key))
        if per_param:
            if not x:
                raise Missing("configs.%d: %s is 0" % (i, param))
            v /= x
        points.append((x, v))
    if not points:
        raise Missing("no configs: the sweep has no complete run")
    return points


def sweep_peak(points):
    """The first configuration, by grid value, of the largest value."""
    points = sorted(points, key=lambda p: p[0])
    peak = points[0]
    for p in points:
        if p[1] > peak[1]:
            peak = p
    return points, peak


def sweep_value(sweep, col):
    """A falls, largest or peak column's reading of one repetition's
    sweep.json, as internal/reproduce/measure.go reads it."""
    if "sweep_key" in col:
        v = lookup(sweep, col["sweep_key"].format(**col.get("_names", {})))
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise Missing("%s is %r, not a number" % (col["sweep_key"], v))
        return float(v) * col.get("factor", 1)
    if "falls" in col:
        f = col["falls"]
        points, peak = sweep_peak(grid_points(sweep, f["param"], f["key"]))
        if peak[1] <= 0:
            raise Missing("%s is never above 0 on the grid" % f["key"])
        for x, v in points:
            if x > peak[0] and v <= f["at_most"] * peak[1]:
                return x
        raise Missing("%s stays above %g of its peak to the end of the grid" % (f["key"], f["at_most"]))
    if "peak" in col:
        p = col["peak"]
        _, peak = sweep_peak(grid_points(sweep, p["param"], p["key"]))
        return peak[0] if p.get("value") == "at" else peak[1]
    l = col["largest"]
    points = grid_points(sweep, l["param"], l["key"], l.get("per_param", False))

    def good(v):
        return "at_least" in l and v >= l["at_least"] or "at_most" in l and v <= l["at_most"]

    failing = [x for x, v in points if not good(v)]
    if not failing:
        raise Missing("within the bound at every %s of the grid, up to %s: the capacity is above it"
                      % (l["param"], "{:,.0f}".format(max(x for x, _ in points))))
    below = [x for x, _ in points if x < min(failing)]
    if not below:
        raise Missing("out of the bound already at the smallest %s: the capacity is below the grid" % l["param"])
    return max(below)


class Repetition:
    """One repetition's directory, its summary and time scale read once."""

    def __init__(self, root, path, sweep=False):
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
        name = "sweep.json" if sweep else "summary.json"
        if not os.path.isdir(path):
            # a configuration past the end of this sweep's grid, or a run
            # this directory never held
            self.failed = "not run here (not in this sweep's grid, or not copied)"
            return
        try:
            with open(os.path.join(path, name)) as f:
                self.summary = json.load(f)
        except OSError:
            self.failed = "no %s (still running, or not copied)" % name
            return
        except ValueError as err:
            self.failed = "%s does not parse (%s)" % (name, err)
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
        if any(k in col for k in SWEEP_READINGS):
            return sweep_value(self.summary, dict(col, _names=names))
        if "answered" in col:
            return answered(self.path, col["answered"])
        if "drop" in col:
            return window_drop(self.path, col["drop"], self.summary)
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
        if "per_run" in col:
            v /= self.other_run(col["per_run"], names)
        if "per_param" in col:
            v /= self.grid_value(col["per_param"])
        if col.get("unscale"):
            if not self.scale:
                raise Missing("no time_scale in reproduce-run.json")
            v /= self.scale
        return v * col.get("factor", 1)


    def other_run(self, per, names):
        """per["key"] of the same repetition of another run, non-zero."""
        run, rn = per["run"].format(**names), os.path.basename(self.path)
        try:
            with open(os.path.join(self.root, run, rn, "summary.json")) as f:
                other = json.load(f)
        except (OSError, ValueError):
            raise Missing("no %s/%s/summary.json to divide by" % (run, rn))
        d = lookup(other, per["key"].format(**names))
        if not isinstance(d, (int, float)) or not d:
            raise Missing("%s/%s: cannot divide by %s = %r" % (run, rn, per["key"], d))
        return float(d)

    def grid_value(self, param):
        """This configuration's value of a grid key, from the sweep.json
        beside it."""
        cfg = os.path.basename(self.path)
        try:
            with open(os.path.join(os.path.dirname(self.path), "sweep.json")) as f:
                sweep = json.load(f)
        except (OSError, ValueError):
            raise Missing("no readable sweep.json beside %s (`faultbench reproduce` writes it when it judges "
                          "the sweep)" % cfg)
        try:
            n = int(cfg.split("-")[1])
            x = float(next(c for c in sweep["configs"] if c["config"] == n)["params"][param])
        except (ValueError, KeyError, IndexError, TypeError, StopIteration):
            raise Missing("no %s of %s in the sweep.json beside it" % (param, cfg))
        if not x:
            raise Missing("%s is 0" % param)
        return x


SWEEP_READINGS = ("falls", "largest", "peak", "sweep_key")


def run_of(row, col):
    """The run a column reads in a row: the column's, with the row's vars,
    if it names one, else the row's; None for neither (a text column)."""
    if "run" in col:
        return col["run"].format(**row.get("vars", {}))
    return row.get("run")


def repetitions(root, row, col):
    """The repetitions, r1, r2, ... in order, that a column reads in a row:
    of the column's run if it names one, else the row's; a sweep reading's
    are the rN/ themselves."""
    run = run_of(row, col)
    if run is None:
        return []
    base = os.path.join(root, run)
    try:
        names = [n for n in os.listdir(base) if n[:1] == "r" and n[1:].isdigit()]
    except OSError:
        return []
    names.sort(key=lambda n: int(n[1:]))
    sweep = any(k in col for k in SWEEP_READINGS)
    if "config" in row and not sweep:
        paths = [os.path.join(base, n, "cfg-%04d-r1" % row["config"]) for n in names]
    else:
        paths = [os.path.join(base, n) for n in names]
    return [Repetition(root, p, sweep) for p in paths]


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
    run = run_of(row, col)
    if not reps:
        return "–" + notes.mark("%s: not in this directory (not run yet, or not copied)" % run)
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
        why.setdefault(problem, []).append(os.path.relpath(rep.path, os.path.join(rep.root, run)))
    left_out = "" if not values else " (left out of the cell)"
    marks = [notes.mark("%s (%s): %s%s" % (run, ", ".join(which), problem, left_out))
             for problem, which in why.items()]
    return (aggregate(values, col) if values else "–") + ",".join(marks)


def render(spec, root):
    notes = Notes()
    heads = list(spec["labels"]) + [c["head"] for c in spec["columns"]]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    previous = None
    for row in spec["rows"]:
        labels = list(row["labels"])
        if len(labels) > 1 and labels[0] == previous:
            labels[0] = ""
        else:
            previous = labels[0]
        if "cells" in row:
            cells = labels + list(row["cells"])
        else:
            cells = labels + [cell(c, row, repetitions(root, row, c), notes) for c in spec["columns"]]
        lines.append("| " + " | ".join(cells) + " |")
    if notes.texts:
        lines.append("")
        lines.extend("%s %s  " % (str(i + 1).translate(SUPERSCRIPT), t) for i, t in enumerate(notes.texts))
        lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)


def render_claims(what, root):
    """A paper's claims as DIR/reproduce.json judged them: where in the
    paper, the published value, the measured one, the verdict and, for a
    claim that differs or is close, the reason the paper's data file gives.
    what is PAPER, or PAPER:PREFIX,... for the claims whose ids start so."""
    path = os.path.join(root, "reproduce.json")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("tables.py: %s: %s (the judgement `faultbench reproduce` writes)" % (path, e))
    paper, _, prefixes = what.partition(":")
    prefixes = [x for x in prefixes.split(",") if x]
    papers = {p["key"]: p for p in doc.get("papers", [])}
    if paper not in papers:
        raise SystemExit("tables.py: %s holds no paper %r; it holds: %s" % (path, paper, ", ".join(papers)))
    lines = ["| claim | where in the paper | published | measured | verdict | why it differs |",
             "|---|---|---|---|---|---|"]
    claims = [c for c in papers[paper]["claims"] if not prefixes or any(c["id"].startswith(x) for x in prefixes)]
    if not claims:
        raise SystemExit("tables.py: %s has no claim whose id starts with %s" % (paper, " or ".join(prefixes)))
    for c in claims:
        measured = (c.get("measured") or {}).get("text", "–")
        why = c.get("reason", "") if c["verdict"] in ("differs", "close") else ""
        cells = [c["id"], c["location"], c.get("published_text", ""), measured, c["verdict"], why]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
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
            runs = [row["run"] for row in spec["rows"] if "run" in row]
            runs += [c["run"] for c in spec["columns"] if "run" in c]
            runs += [c["per_run"]["run"] for c in spec["columns"] if "per_run" in c]
            experiments = sorted({"/".join(r.split("/")[:2]) for r in runs})
            print("%s\n    %s\n    reads %s" % (name, spec["what"], ", ".join(experiments)))
        return 0
    if what.startswith("claims:"):
        print(render_claims(what[len("claims:"):], root))
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
