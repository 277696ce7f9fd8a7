#!/usr/bin/env python3
"""Checks a fobench run on the cuda model against docs/fairness.md, from
the model's op log (FOB_MODEL_OP_LOG: every op the model ran, with its NVTX task, its case range
and what its library noted) and the results file's hardware facts.

    fairness_check.py OPLOG_DIR HARDWARE_CSV SM_COUNT COMM_SMS

The run: ag_gemm at 2 ranks over NCCL, compute_only, comm_only, baseline, slicing:2 and flash,
one round. Prints one "ok: ..." line per property; exits 1 naming the first that does not hold.
"""
import csv
import glob
import re
import sys
from collections import defaultdict

FIELD = re.compile(r'(\w+)=(?:"([^"]*)"|(\S+))')


def parse(line):
    return {k: (q if q or v == "" else v) for k, q, v in FIELD.findall(line)}


def note(op):
    return dict(w.split("=", 1) for w in op["note"].split() if "=" in w)


def fail(text):
    print("FAIL: " + text, file=sys.stderr)
    sys.exit(1)


def ops_of(log_dir):
    """Per process, its ops in enqueue order."""
    out = []
    for path in sorted(glob.glob(log_dir + "/ops.*.log")):
        with open(path) as f:
            ops = [parse(line) for line in f if line.startswith("op ")]
        for op in ops:
            for k in ("seq", "enqueue_ns", "start_ns", "end_ns"):
                op[k] = int(op[k])
        out.append(sorted(ops, key=lambda op: op["seq"]))
    if len(out) != 2:
        fail(f"{len(out)} op logs in {log_dir}, expected one per rank (2)")
    return out


def case_of(op):
    return op["range"][len("case ag_gemm "):] if op["range"].startswith("case ag_gemm ") else ""


def in_task(op):
    """An op a plan task launched (its NVTX task is a task's label, not the iteration or case)."""
    return op["task"] not in ("", "iteration", "iteration (captured)", op["range"])


def iterations(ops):
    """The gated iterations: each gate's wait and the task ops after it, up to the next gate or
    the next op outside every iteration (a fill, a poison, a read-back)."""
    groups, current = [], None
    for op in ops:
        if op["name"].startswith("cuStreamWaitValue32"):
            current = {"gate": op, "ops": [], "case": case_of(op)}
            groups.append(current)
        elif current is not None and in_task(op) and case_of(op) == current["case"]:
            current["ops"].append(op)
        elif current is not None and op["task"] in ("", op["range"]):
            current = None
    return [g for g in groups if g["ops"]]


def check_communicators(procs):
    ctas = defaultdict(set)
    for ops in procs:
        for op in ops:
            if op["name"].startswith("nccl") and case_of(op):
                ctas[case_of(op)].add(note(op).get("max_ctas"))
    for case in ("comm_only", "baseline"):
        if ctas[case] != {"64"}:
            fail(f"{case}'s collectives ran on max_ctas {sorted(ctas[case])}, not NCCL's 64")
    for case in ("slicing:2", "flash"):
        if ctas[case] != {"16"}:
            fail(f"{case}'s transfers ran on max_ctas {sorted(ctas[case])}, not --comm-sms 16")
    print("ok: reference collectives on NCCL's own CTA limit (64), overlapping transfers capped (16)")


def check_registered_and_bytes(procs):
    moved = defaultdict(int)
    for ops in procs:
        for op in ops:
            if not op["name"].startswith("nccl"):
                continue
            if note(op).get("registered") != "1":
                fail(f"an NCCL op of case {case_of(op)!r} ({op['task']}) used an unregistered buffer")
            if case_of(op):
                moved[case_of(op)] += int(note(op).get("bytes", 0))
    if len({moved[c] for c in ("comm_only", "baseline", "slicing:2", "flash")}) != 1:
        fail(f"the strategies moved different bytes for one all-gather: {dict(moved)}")
    print(f"ok: every NCCL buffer registered; comm_only, baseline, slicing:2 and flash each moved "
          f"{moved['baseline']} bytes")


def check_no_copy(procs):
    for ops in procs:
        for op in ops:
            if case_of(op) == "slicing:2" and in_task(op) and "Memcpy" in op["name"]:
                fail(f"slicing:2's task {op['task']!r} made a device copy ({op['name']})")
    print("ok: slicing issues no copy: its chunks gather in place")


def check_gate(procs):
    counted = defaultdict(int)
    for ops in procs:
        for g in iterations(ops):
            last_launch = max(op["enqueue_ns"] for op in g["ops"])
            first_start = min(op["start_ns"] for op in g["ops"])
            if first_start < last_launch:
                fail(f"case {g['case']}: a task started {last_launch - first_start} ns before its "
                     f"iteration's last launch")
            if g["gate"]["end_ns"] < last_launch:
                fail(f"case {g['case']}: the gate opened before the last launch")
            counted[g["case"]] += 1
    # 1 warm-up and 3 timed iterations per case and rank, each held behind the gate.
    for case in ("compute_only", "comm_only", "baseline", "slicing:2", "flash"):
        if counted[case] != 2 * 4:
            fail(f"case {case}: {counted[case]} gated iterations, expected 8")
    print("ok: no task of a timed iteration starts before the iteration's last launch")


def gemms(ops, gated):
    seqs = {op["seq"] for g in iterations(ops) for op in g["ops"]}
    return [op for op in ops if op["name"].startswith("cublas") and in_task(op)
            and (op["seq"] in seqs) == gated]


def check_data_and_targets(procs, sm_count, comm_sms):
    for ops in procs:
        timed, verified = gemms(ops, True), gemms(ops, False)
        if not timed or not verified:
            fail("no timed or no verified GEMM in the op log")
        for op in verified:
            n = note(op)
            if n.get("a_integral") != "1" or n.get("b_integral") != "1":
                fail(f"a verified GEMM ({op['task']}) read non-integer data: {op['note']}")
        for op in timed:
            n = note(op)
            if n.get("a_integral") == "1" and n.get("b_integral") == "1":
                fail(f"a timed GEMM ({op['task']}, {case_of(op)}) read the verified integers")
        targets = defaultdict(set)
        for op in timed + verified:
            targets[case_of(op)].add(int(note(op)["sm_target"]))
        for case in ("compute_only", "baseline"):
            if targets[case] != {0}:
                fail(f"{case}'s GEMMs had SM targets {sorted(targets[case])}, not all SMs (0)")
        if targets["flash"] - {0, sm_count - comm_sms} or sm_count - comm_sms not in targets["flash"]:
            fail(f"flash's GEMMs had SM targets {sorted(targets['flash'])}, not "
                 f"{sm_count - comm_sms} beside its transfers")
    print("ok: timed GEMMs read other data than the verified ones; only GEMMs beside a transfer "
          "leave SMs to NCCL")


def check_hardware(csv_path):
    by_rank = defaultdict(dict)
    with open(csv_path) as f:
        for row in csv.reader(line for line in f if not line.startswith("#")):
            if row and row[0] != "case":
                by_rank[(row[1], row[2])][row[3]] = ",".join(row[4:])
    base, flash, run = by_rank[("baseline", "0")], by_rank[("flash", "0")], by_rank[("(run)", "0")]
    # Each rank names the other's GPU (the model's two GPUs reach each other over NVLink).
    links = [by_rank[("(run)", r)].get("gpu_nvlink_to", "") for r in ("0", "1")]
    if not all(link.endswith(": yes") for link in links) or links[0] == links[1]:
        fail(f"each rank should name the other's GPU as reached over NVLink: {links}")
    want = {"nccl_coll_channels": None, "nccl_ring_path": "NVL/PIX", "math": "exact",
            "nccl_communicator": None, "gpu_sm_clock_mhz": None, "gpu_throttled": "no"}
    for key, value in want.items():
        if key not in flash or (value and flash[key] != value):
            fail(f"flash's facts lack {key}={value or '...'}: {flash.get(key)}")
    if not int(base["nccl_coll_channels"]) > int(flash["nccl_coll_channels"]):
        fail(f"the reference communicator has {base['nccl_coll_channels']} channels, the capped "
             f"one {flash['nccl_coll_channels']}")
    if "P2P/CUMEM" not in flash.get("nccl_p2p_transports", ""):
        fail(f"flash's transports: {flash.get('nccl_p2p_transports')}")
    if "nvml" not in run or "cpu_binding" not in run:
        fail(f"the run's facts lack nvml or cpu_binding: {run}")
    print(f"ok: the file records channels ({base['nccl_coll_channels']} reference, "
          f"{flash['nccl_coll_channels']} capped), transports ({flash['nccl_p2p_transports']}), "
          f"ring path {flash['nccl_ring_path']}, clocks {flash['gpu_sm_clock_mhz']} MHz, math "
          f"{flash['math']}")


def main():
    log_dir, hardware_csv, sm_count, comm_sms = sys.argv[1:5]
    procs = ops_of(log_dir)
    check_communicators(procs)
    check_registered_and_bytes(procs)
    check_no_copy(procs)
    check_gate(procs)
    check_data_and_targets(procs, int(sm_count), int(comm_sms))
    check_hardware(hardware_csv)


if __name__ == "__main__":
    main()
