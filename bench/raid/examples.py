#!/usr/bin/env python3
"""Writes every examples/raid-*.yaml: the availability benchmarks of Brown
and Patterson (2000) (Brown & Patterson, "Towards Availability Benchmarks"),
one file per experiment, all from the shapes below so the files stay
consistent. Edit here and rerun rather than editing a file. Run from the
repository root:

    python3 bench/raid/examples.py

It writes 70 files:

Micro-benchmarks (Brown and Patterson 2000, §4.1, Table 1): one fault into active disk 2 of a
4+1 RAID-5 under a read-mostly web load, no operator; 15 faults × 4
columns = 60 files raid-micro-<fault>-<column>.yaml. Three columns are
transient policies, each run with the reconstruction of the system it is
after, so the table reads against Table 1's columns:

    paranoid    -> Linux:   reconstruction low (slow, in the background), automatic
    tolerant    -> Solaris: reconstruction high (as fast as the disks go), automatic
    threshold   -> none of the three (the paper's own proposal §4.1):
                   threshold(3, 10m), adaptive reconstruction, automatic

and the fourth is a whole policy set (the raid system's policy_set option):

    windows2000 -> Windows 2000: strict-writes, adaptive, started only by the
                   administrator, who does nothing here

Macro-benchmarks (§4.2), 10 files:

  raid-macro-reconstruction-{linux,solaris,windows}: a member fails,
    rebuild onto the spare, the spare fails, both disks replaced, second
    rebuild; Windows rebuilds only when the administrator starts it, 6
    minutes after noticing. Open-loop load at half the knee.
  raid-macro-reconstruction-closed-{linux,solaris,windows}: the same
    runs under closed-loop users at saturation, the paper's way, where the
    rebuild's cost shows as lost throughput rather than latency.
  raid-macro-double-failure: the administrator pulls the wrong live disk
    during the rebuild, puts it back and forces the volume (threshold
    policy).
  raid-macro-double-failure-{linux,solaris,windows2000}: the same mistake
    under each policy set, with the steps that system's administrator
    could take.

Rebuild speed is the node's own (a rate in MB/s), not scaled by
--time-scale, so the disks are kept small (32 MiB) and the low rate is
1.5 MB/s: a low-priority rebuild takes about 22 s, short enough to finish
inside every run at --time-scale 0.2 and at 1.
"""
import os

# The load (Brown and Patterson 2000, §3.3: "just short of the saturation point"): a knee
# search against the started array before the run, then the run at a
# fraction of the knee.
#
# The disks take 2 ms a command, one at a time (a fast disk's service
# time), so that the array, not the CPU, is what saturates: with the
# paper's 510 us emulator overhead the front end's CPU saturated first
# (knee ~1000/s), and on the shared 2-core development machine the knee
# then followed the other jobs' load — searches found 534/s to 2088/s —
# and so did every result. Measured there with 2 ms (constant arrivals):
#   healthy array:  three searches at --time-scale 0.2: knee 478, 478 and
#                   562 req/s (p99 bound 200 ms);
#   degraded array (disk 2 removed, no spare, scale 1): 290/s p99 33 ms,
#                   goodput 1; 360/s p99 2.1 s, goodput 0.975: knee ~330/s.
# A degraded read of the missing member costs three disk commands instead
# of one: the degraded knee is ~0.65 of the healthy one. Just below the
# healthy knee, losing a disk alone would overload the array and every
# policy would look alike, so the runs back off to half the healthy knee,
# below the degraded one, and what a run shows is the policy's doing; a
# high-priority rebuild, which takes the disks' bandwidth, still shows.
#
# Steps of 10 s with a p99 bound of 1 s (2 s and 200 ms at --time-scale
# 0.2, the scale the micro-benchmarks are tabulated at); the
# macro-benchmarks, tabulated at 0.1, use 20 s and 2 s, the same when
# scaled. Shorter steps miss the queue an overloaded array builds (a 2 s
# step at 1.3x capacity leaves ~0.5 s of backlog, well above the bound); a
# tighter bound fails on the shared machine's own hiccups.
KNEE_MICRO = "{start: 200, max: 4000, factor: 1.5, refine: 3, step_time: 10s, goodput: 0.99, p99: 1s, fraction: 0.5}"
KNEE_MACRO = "{start: 200, max: 4000, factor: 1.5, refine: 3, step_time: 20s, goodput: 0.99, p99: 2s, fraction: 0.5}"

POLICIES = {
    # name: (transient_policy, reconstruction, auto, after)
    "paranoid": ("paranoid", "low", True, "Linux"),
    "tolerant": ("tolerant", "high", True, "Solaris"),
    "threshold": ("threshold(3, 10m)", "adaptive", True, "none of the three: the counting policy §4.1 asks for"),
}

# The raid system's policy sets (policy_set option, docs/raid.md "Policy
# sets"): transient policy, reconstruction, who starts it, and what a double
# failure does. The comment is the file's reminder of what the one line sets.
POLICY_SETS = {
    "linux": "paranoid, low, automatic, double failure unrecoverable",
    "solaris": "tolerant, high, automatic, double failure keep-serving",
    "windows2000": "strict-writes, adaptive, manual, double failure recoverable",
}

# The 15 rows of Table 1: (file name, disk fault type, mode, Table 1 row).
# Hangs, power failure and removal are fatal conditions in the paper (no
# transient variant); they are sticky here: the disk stays hung or gone
# until the run's end reverts it.
FAULTS = [
    ("read-correctable-transient", "disk-read-correctable", "transient", "Correctable read, transient"),
    ("read-correctable-sticky", "disk-read-correctable", "sticky", "Correctable read, sticky"),
    ("read-uncorrectable-transient", "disk-read-uncorrectable", "transient", "Uncorrectable read, transient"),
    ("read-uncorrectable-sticky", "disk-read-uncorrectable", "sticky", "Uncorrectable read, sticky"),
    ("write-correctable-transient", "disk-write-correctable", "transient", "Correctable write, transient"),
    ("write-correctable-sticky", "disk-write-correctable", "sticky", "Correctable write, sticky"),
    ("write-uncorrectable-transient", "disk-write-uncorrectable", "transient", "Uncorrectable write, transient"),
    ("write-uncorrectable-sticky", "disk-write-uncorrectable", "sticky", "Uncorrectable write, sticky"),
    ("hw-error-transient", "disk-hw-error", "transient", "Hardware error, transient"),
    ("illegal-command-transient", "disk-illegal-command", "transient", "Illegal command, transient"),
    ("hang-read", "disk-hang-read", "sticky", "Disk hang on read"),
    ("hang-write", "disk-hang-write", "sticky", "Disk hang on write"),
    ("hang-idle", "disk-hang-idle", "sticky", "Disk hang, not on a command"),
    ("power-fail", "disk-power-fail", "sticky", "Power failure during command"),
    ("remove", "disk-remove", "sticky", "Physical removal of active disk"),
]

HEADER = """# {title}
# Generated by bench/raid/examples.py: edit there.
#
{story}
#
"""

# What an open-loop file says after its story: the array, the knee-searched
# load and how to run it.
OPEN_LOOP_NOTES = """# Array (Brown and Patterson 2000, §3.2, scaled down): 4 active disks + 1 hot spare, RAID-5,
# left-symmetric, 32 KiB chunks, 32 MiB per disk, 2 ms per disk command
# (one command at a time per disk: the disks, not the CPU, saturate), 2 s
# command timeout. The web front end serves 2,000 pages of 26 KiB from the
# volume and appends its access log to it; every page is verified.
# Load: a knee search finds the healthy array's saturation rate before the
# run (knee.csv); the run offers half of it (~300 req/s here), below the
# degraded array's knee too (see bench/raid/examples.py). Constant arrivals:
# every window is offered the same number of requests, so a dip in ok
# throughput is the array's doing, not the arrival process's noise (with
# Poisson arrivals, 1 s windows swing by ±2.6σ ≈ ±45 req/s by themselves).
#
# Run:    faultbench run {file}            ({minutes} min after the knee search)
# Short:  faultbench run {file} --time-scale 0.2
#         (rebuild rates are the node's own and are not scaled: a low-rate
#         rebuild takes ~22 s at every scale.)
"""

# A closed-loop file's story points at its open-loop twin for the array,
# and there is no knee search to wait for.
CLOSED_LOOP_NOTES = """# Run:    faultbench run {file}            ({minutes} min)
# Short:  faultbench run {file} --time-scale 0.2
"""

BODY = """name: {name}
seed: 1
cluster:
  system: raid
  nodes: 1
  pages: 2000
  page_size: 26624
  options:
    disks: "4"
    spares: "1"
    chunk: 32KiB
    disk_size: 32MiB
    io_overhead: 2ms
    io_timeout: 2s
{policy}
    reconstruction_low_rate: 1.5MB/s
    reconstruction_max_rate: 20MB/s
workload:
{load}
  trace: "zipf:2000:1.0"
  connect_timeout: 2s
  response_timeout: 6s
  window: 5s
phases:
{phases}
faults:
{faults}
operator:
  policy: none                 # the administrator's steps are scheduled events above
"""

# The closed-loop load (Brown and Patterson 2000, §3.3, as they ran it):
# 64 users sending back to back keep the healthy array saturated.
CLOSED_LOAD = """  model: closed               # users wait for each page: the load follows the array
  clients: 4
  users: 16                    # 64 users back to back: enough to saturate the healthy array
  think: "0\""""


def open_load(knee):
    return f"  knee: {knee}\n  arrivals: constant\n  clients: 4"


def transient_policy(policy, recon, auto):
    """The three knobs a transient-policy column sets one by one."""
    return f'    transient_policy: "{policy}"\n    reconstruction: {recon}\n    reconstruction_auto: "{str(auto).lower()}"'


def policy_set(name):
    """The one knob that sets all of a system's policies at once."""
    return f"    {'policy_set: ' + name:<29}# {POLICY_SETS[name]}"


def phases(*pairs):
    return "\n".join(f"  - {{name: {n}, duration: {d}s}}" for n, d in pairs)


def write(name, title, story, policy, ph, faults, load=open_load(KNEE_MICRO)):
    """Writes examples/<name>.yaml. policy is the options' policy lines
    (transient_policy or policy_set); load is the workload's lines before the
    trace (open_load or CLOSED_LOAD), which also picks the notes under the
    story."""
    file = f"examples/{name}.yaml"
    total = sum(d for _, d in ph)
    minutes = f"{total / 60:.1f}".rstrip("0").rstrip(".")
    story = "\n".join("# " + line if line else "#" for line in story.strip().splitlines())
    notes = CLOSED_LOOP_NOTES if load == CLOSED_LOAD else OPEN_LOOP_NOTES
    text = HEADER.format(title=title, story=story) + notes.format(file=file, minutes=minutes) + \
        BODY.format(name=name, policy=policy, load=load, phases=phases(*ph), faults=faults)
    with open(file, "w") as f:
        f.write(text)
    return file


# Micro shape: warm-up 40 s, the fault at 40 s, 160 s to watch the system
# react (detect, rebuild, settle) without an operator.
MICRO_WARMUP, MICRO_FAULT = 40, 160


def micro_column(policy):
    """(title label, story after "under the ", options lines) for a Table 1 column."""
    if policy == "windows2000":
        return ("windows2000 policy set", """windows2000 policy set
(after Windows 2000: transient policy strict-writes, reconstruction adaptive,
started only by the administrator, who does nothing here: a disk taken out
stays out, pattern B).""", policy_set(policy))
    tp, recon, auto, after = POLICIES[policy]
    return (f"{policy} policy", f"""{policy} transient policy
(after {after}; reconstruction {recon}, {'automatic' if auto else 'manual'}).""", transient_policy(tp, recon, auto))


def micro(fault, policy):
    slug, typ, mode, row = fault
    label, column, options = micro_column(policy)
    if mode == "sticky":
        entry = f"  - {{type: {typ}, node: 1, disk: 2, at: {MICRO_WARMUP}s, mode: sticky}}"
        how = "sticky: it fires on every matching command until the run's end reverts it"
    else:
        # A transient disk fault fires once, on the next matching command;
        # the duration only bounds how long it may wait to fire.
        entry = f"  - {{type: {typ}, node: 1, disk: 2, at: {MICRO_WARMUP}s, duration: {MICRO_FAULT - 10}s, mode: transient}}"
        how = "transient: it fires once, on the next matching command"
    story = f"""Brown and Patterson (2000) Table 1, row "{row}", under the {column}
{typ} into active disk 2 at {MICRO_WARMUP} s, {how}.
No operator: the run shows what the array does by itself (A: nothing
visible; B: degraded and stays so; C-1/C-2: rebuilds onto the spare without
/ with a significant dip; D: stops serving). redundancy and rebuild_progress
are sampled into windows.csv and drawn on the graph's second axis."""
    return write(f"raid-micro-{slug}-{policy}", f"RAID-5 micro-benchmark: {row}, {label}.", story,
                 options, [("warmup", MICRO_WARMUP), ("fault", MICRO_FAULT)], entry)


# Macro scenario 1 (§4.2), at scale 1 (times in seconds):
#   120  (1) active disk 2 loses power; automatic policies rebuild at once
#   480  Windows: the administrator starts the rebuild 6 minutes later
#   720  (3) the spare, now a member (disk 5), loses power
#   810  (4) the administrator replaces both failed disks (90 s, as in the paper)
#        (5) automatic policies rebuild onto a new disk at once;
#   1170 Windows: started 6 minutes after the replacement
#   1500 end
ADMIN_DELAY = 360
RECON_FAIL1, RECON_FAIL2, RECON_REPLACE, RECON_END = 120, 720, 810, 1500
RECON_PHASES = [("warmup", RECON_FAIL1), ("fault", RECON_FAIL2 - RECON_FAIL1), ("repair", RECON_END - RECON_FAIL2)]
MACRO = {
    "linux": ("paranoid", "low", True, "Linux: paranoid, slow low-priority rebuild, automatic"),
    "solaris": ("tolerant", "high", True, "Solaris: tolerant, fast high-priority rebuild, automatic"),
    "windows": ("tolerant", "adaptive", False, "Windows 2000: tolerant, adaptive rebuild, started by the administrator"),
}


def reconstruction_faults(auto):
    faults = [f"  - {{type: disk-power-fail, node: 1, disk: 2, at: {RECON_FAIL1}s, mode: sticky}}   # (1) a member fails"]
    if not auto:
        faults.append(f"  - {{type: start-reconstruction, node: 1, disk: 5, at: {RECON_FAIL1 + ADMIN_DELAY}s}}   # (2) the administrator, 6 min later")
    faults += [
        f"  - {{type: disk-power-fail, node: 1, disk: 5, at: {RECON_FAIL2}s, mode: sticky}}   # (3) the rebuilt spare fails",
        f"  - {{type: replace-disk, node: 1, disk: 2, at: {RECON_REPLACE}s}}   # (4) both failed disks replaced",
        f"  - {{type: replace-disk, node: 1, disk: 5, at: {RECON_REPLACE}s}}",
    ]
    if not auto:
        faults.append(f"  - {{type: start-reconstruction, node: 1, disk: 0, at: {RECON_REPLACE + ADMIN_DELAY}s}}   # (5) rebuild onto a new disk, 6 min later")
    return "\n".join(faults)


def macro_reconstruction(policy):
    tp, recon, auto, after = MACRO[policy]
    story = f"""Brown and Patterson (2000) §4.2 scenario 1 (reconstruction), {after}.
(1) active disk 2 loses power at {RECON_FAIL1} s; (2) the volume rebuilds onto the
hot spare ({'at once' if auto else f'when the administrator starts it, {ADMIN_DELAY} s later'});
(3) at {RECON_FAIL2} s the spare, now a member, loses power too; (4) at {RECON_REPLACE} s
the administrator replaces both failed disks (the new disks are spares);
(5) the volume rebuilds onto one of them ({'at once' if auto else f'{ADMIN_DELAY} s later, started by the administrator'}).
Compare reconstruction time with the worst throughput drop during it
(bench/raid/table.py): the trade-off of §4.2."""
    return write(f"raid-macro-reconstruction-{policy}", f"RAID-5 macro-benchmark: reconstruction, {policy}-like policy.",
                 story, transient_policy(tp, recon, auto), RECON_PHASES, reconstruction_faults(auto),
                 load=open_load(KNEE_MACRO))


def macro_reconstruction_closed(policy):
    """The open-loop reconstruction file's array, faults and phases under
    closed-loop users."""
    tp, recon, auto, _ = MACRO[policy]
    story = f"""Brown and Patterson (2000) drove their arrays with closed-loop clients at
saturation: each request waits for the previous one, so the rebuild's cost
shows as lost throughput (their 34% drop for a fast rebuild), where the
open-loop example offers a fixed rate below the knee and shows it as
latency instead. Here 4 clients x 16 users send back to back
(workload.model: closed, think 0); compare the two runs side by side:
  faultbench report results/raid-macro-reconstruction-{policy}-* results/raid-macro-reconstruction-closed-{policy}-*
Same array, faults and phases as the open-loop file (see its comments)."""
    return write(f"raid-macro-reconstruction-closed-{policy}",
                 f"RAID-5 macro-benchmark: reconstruction, {policy}-like policy, CLOSED-LOOP users.",
                 story, transient_policy(tp, recon, auto), RECON_PHASES, reconstruction_faults(auto),
                 load=CLOSED_LOAD)


# Macro scenario 2 (§4.2), at scale 1 (times in seconds): a member fails at
# 60, the administrator pulls live disk 3 during the rebuild at 70, puts it
# back at 160 and forces the volume at 190; the run ends at 300.
DF_FAIL, DF_PULL, DF_REINSERT, DF_FORCE, DF_END = 60, 70, 160, 190, 300


def macro_double_failure():
    faults = "\n".join([
        f"  - {{type: disk-power-fail, node: 1, disk: 2, at: {DF_FAIL}s, mode: sticky}}   # (1) a member fails; (2) rebuild onto the spare",
        f"  - {{type: remove-wrong-disk, node: 1, disk: 3, at: {DF_PULL}s}}   # (3) the administrator pulls live disk 3",
        f"  - {{type: replace-disk, node: 1, disk: 3, at: {DF_REINSERT}s, params: {{reinsert: \"true\"}}}}   # (4) puts disk 3 back",
        f"  - {{type: start-reconstruction, node: 1, disk: 0, at: {DF_FORCE}s, params: {{force: \"true\"}}}}   # and forces the volume",
    ])
    story = f"""Brown and Patterson (2000) §4.2 scenario 2 (double failure), threshold policy, low-rate
automatic rebuild. (1) active disk 2 loses power at {DF_FAIL} s; (2) the volume
starts rebuilding onto the spare (~22 s at the low rate); (3) at {DF_PULL} s, during
the rebuild, the administrator pulls live disk 3 instead of the dead one: two
members are missing, and the volume must refuse every read and write (503),
never serve garbage (Solaris's defect); (4) at {DF_REINSERT} s they put disk 3 back
(it is not taken back by itself) and at {DF_FORCE} s force the volume, which
serves again from the disks present, checks every block against its
checksums (disk 3 missed the log writes made while it was out) and restarts
the rebuild onto the spare. Expected: pattern D from {DF_PULL} s to {DF_FORCE} s, no
data_error at any time."""
    return write("raid-macro-double-failure", "RAID-5 macro-benchmark: double failure (wrong disk pulled during the rebuild).",
                 story, transient_policy("threshold(3, 10m)", "low", True),
                 [("warmup", DF_FAIL), ("fault", DF_PULL - DF_FAIL), ("outage", DF_FORCE - DF_PULL), ("recovery", DF_END - DF_FORCE)],
                 faults, load=open_load(KNEE_MACRO))


def macro_double_failure_linux():
    # A force is refused on a lost volume (409), and a refused step counts
    # as a failed injection: the administrator's last step is not scheduled.
    faults = "\n".join([
        f"  - {{type: disk-power-fail, node: 1, disk: 2, at: {DF_FAIL}s, mode: sticky}}   # (1) a member fails; (2) rebuild onto the spare",
        f"  - {{type: remove-wrong-disk, node: 1, disk: 3, at: {DF_PULL}s}}   # (3) the administrator pulls live disk 3",
        f"  - {{type: replace-disk, node: 1, disk: 3, at: {DF_REINSERT}s, params: {{reinsert: \"true\"}}}}   # (4) puts disk 3 back: not taken back",
    ])
    story = f"""Brown and Patterson (2000) §4.2 scenario 2 (double failure), Linux: the
linux policy set (paranoid, low-rate automatic rebuild, double_failure
unrecoverable). (1) active disk 2 loses power at {DF_FAIL} s; (2) the volume
starts rebuilding onto the spare; (3) at {DF_PULL} s, during the rebuild, the
administrator pulls live disk 3 instead of the dead one: the volume
refuses every read and write (503); (4) at {DF_REINSERT} s they put disk 3 back,
which does not revive the volume. The paper found no way to make Linux
take the disk back as data; neither is there one here: a force is refused
(409, "the volume is lost"), so the scenario does not schedule one (a
refused step would count as a failed injection). Expected: no page served
from {DF_PULL} s to the end (outage and recovery), no data_error."""
    return write("raid-macro-double-failure-linux", "RAID-5 macro-benchmark: double failure under the linux policy set.",
                 story, policy_set("linux"),
                 [("warmup", DF_FAIL), ("fault", DF_PULL - DF_FAIL), ("outage", DF_REINSERT - DF_PULL), ("recovery", DF_END - DF_REINSERT)],
                 faults, load=open_load(KNEE_MACRO))


def macro_double_failure_solaris():
    # Solaris switched back to the reinserted disk by itself; that is not
    # emulated, so neither the reinsertion nor a force is scheduled.
    faults = "\n".join([
        f"  - {{type: disk-power-fail, node: 1, disk: 2, at: {DF_FAIL}s, mode: sticky}}   # (1) a member fails; (2) rebuild onto the spare",
        f"  - {{type: remove-wrong-disk, node: 1, disk: 3, at: {DF_PULL}s}}   # (3) the administrator pulls live disk 3",
    ])
    story = f"""Brown and Patterson (2000) §4.2 scenario 2 (double failure), Solaris: the
solaris policy set (tolerant, high-rate automatic rebuild, double_failure
keep-serving). (1) active disk 2 loses power at {DF_FAIL} s; (2) the volume
starts rebuilding onto the spare, as fast as the disks go (~8-10 s, not
scaled); (3) at {DF_PULL} s, during the rebuild, the administrator pulls live
disk 3 instead of the dead one. Like Solaris, the array does not stop:
the partially rebuilt spare becomes a member as it is, checksums are no
longer checked, and every page beyond the rebuild's cursor on the two
lost members comes back with wrong bytes — 200s that the clients'
verification records as data_error. Solaris also switched back to the
reinserted disk by itself, corrupting more; that step is not emulated and
not scheduled. Expected: data_error from {DF_PULL} s on, in the outage phase."""
    return write("raid-macro-double-failure-solaris", "RAID-5 macro-benchmark: double failure under the solaris policy set.",
                 story, policy_set("solaris"),
                 [("warmup", DF_FAIL), ("fault", DF_PULL - DF_FAIL), ("outage", DF_END - DF_PULL)],
                 faults, load=open_load(KNEE_MACRO))


def macro_double_failure_windows2000():
    # Windows 2000 rebuilds only when the administrator starts it: here at
    # once, so the wrong disk is still pulled during the rebuild.
    start = DF_FAIL + 2
    faults = "\n".join([
        f"  - {{type: disk-power-fail, node: 1, disk: 2, at: {DF_FAIL}s, mode: sticky}}   # (1) a member fails",
        f"  - {{type: start-reconstruction, node: 1, disk: 5, at: {start}s}}   # (2) the administrator starts the rebuild",
        f"  - {{type: remove-wrong-disk, node: 1, disk: 3, at: {DF_PULL}s}}   # (3) and pulls live disk 3",
        f"  - {{type: replace-disk, node: 1, disk: 3, at: {DF_REINSERT}s, params: {{reinsert: \"true\"}}}}   # (4) puts disk 3 back",
        f"  - {{type: start-reconstruction, node: 1, disk: 0, at: {DF_FORCE}s, params: {{force: \"true\"}}}}   # and reactivates it",
    ])
    story = f"""Brown and Patterson (2000) §4.2 scenario 2 (double failure), Windows 2000:
the windows2000 policy set (strict-writes, adaptive rebuild started by the
administrator, double_failure recoverable). (1) active disk 2 loses power
at {DF_FAIL} s; (2) at {start} s the administrator starts the rebuild onto the spare;
(3) at {DF_PULL} s, during the rebuild, they pull live disk 3 instead of the dead
one: the volume refuses every read and write (503); (4) at {DF_REINSERT} s they put
disk 3 back (not taken back by itself) and at {DF_FORCE} s reactivate it (force),
which also restarts the rebuild: the volume serves again, checking every
block (disk 3 missed the log writes made while it was out), as Windows
2000 served again once the administrator reactivated the disk.
Expected: pattern D from {DF_PULL} s to {DF_FORCE} s, serving again after, no data_error."""
    return write("raid-macro-double-failure-windows2000", "RAID-5 macro-benchmark: double failure under the windows2000 policy set.",
                 story, policy_set("windows2000"),
                 [("warmup", DF_FAIL), ("fault", DF_PULL - DF_FAIL), ("outage", DF_FORCE - DF_PULL), ("recovery", DF_END - DF_FORCE)],
                 faults, load=open_load(KNEE_MACRO))


def main():
    files = []
    for policy in [*POLICIES, "windows2000"]:
        for fault in FAULTS:
            files.append(micro(fault, policy))
    for policy in MACRO:
        files.append(macro_reconstruction(policy))
    for policy in MACRO:
        files.append(macro_reconstruction_closed(policy))
    files.append(macro_double_failure())
    files.append(macro_double_failure_linux())
    files.append(macro_double_failure_solaris())
    files.append(macro_double_failure_windows2000())
    print("\n".join(files))


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    main()
