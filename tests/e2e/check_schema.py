"""Checks a fobench results file against docs/results-schema.md, reading it with h5py."""
import csv
import json
import math
import sys

import h5py
import numpy as np

path, csv_path, json_path = sys.argv[1:4]
f = h5py.File(path, "r")

for key in ["schema", "version", "git_commit", "created_utc", "command_line", "config_yaml"]:
    assert key in f.attrs, f"root attribute {key} missing"
assert f.attrs["schema"] == "fobench/1", f.attrs["schema"]

system = f["system"].attrs
for key in ["backend", "transport", "world_size", "hostnames", "devices", "mpi_version",
            "nccl_version", "cuda_version", "blas", "link_emulation", "timer", "env"]:
    assert key in system, f"/system attribute {key} missing"
world = int(system["world_size"])
assert world == 2, world
assert system["link_emulation"].startswith("emulated"), system["link_emulation"]
# The CPU backend times tasks with the host's steady clock (docs/results-schema.md#timers).
assert system["timer"] == "host steady_clock", system["timer"]


def union(intervals):
    """Sorted, disjoint intervals covering the same time."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def concurrency(g):
    """docs/metrics.md's definition, written independently of src/core/metrics.cpp: per iteration, the
    ranks' summed time with a compute and a comm task running at once over their summed comm
    busy time; the median over iterations; None without comm time."""
    t = g["tasks"][...]
    start, end = g["task_start"][...], g["task_end"][...]
    values = []
    for it in range(start.shape[0]):
        both = busy = 0.0
        for r in range(start.shape[1]):
            spans = {0: [], 1: []}
            for k in range(start.shape[2]):
                if t[r, k]["task"] >= 0 and end[it, r, k] > start[it, r, k]:
                    spans[int(t[r, k]["stream"])].append((start[it, r, k], end[it, r, k]))
            comp, comm = union(spans[0]), union(spans[1])
            busy += sum(b - a for a, b in comm)
            both += sum(max(0.0, min(b, d) - max(a, c)) for a, b in comp for c, d in comm)
        if busy > 0:
            values.append(both / busy)
    return float(np.median(values)) if values else None

cases = f["cases"]
strategies = sorted(cases[c].attrs["strategy"] for c in cases)
assert strategies == ["baseline", "comm_only", "compute_only", "flash"], strategies
for cid in cases:
    g = cases[cid]
    a = g.attrs
    for key in ["workload", "strategy", "batch", "seq", "hidden", "ffn", "heads", "dtype", "world",
                "iters", "warmup", "verified", "max_abs_err"]:
        assert key in a, f"case {cid}: attribute {key} missing"
    iters = int(a["iters"])
    assert iters == 4 and int(a["warmup"]) == 1
    assert int(a["verified"]) == 1 and float(a["max_abs_err"]) == 0.0
    steps = g["step_seconds"]
    assert steps.shape == (iters, world) and steps.dtype == np.float64
    assert np.all(steps[...] > 0)
    tasks = g["tasks"]
    assert tasks.ndim == 2 and tasks.shape[0] == world
    for field in ["rank", "task", "stream", "kind", "peer", "bytes", "flops"]:
        assert field in tasks.dtype.names, f"tasks field {field} missing"
    ntasks = tasks.shape[1]
    # stream and kind are HDF5 enums: readers take the names from the file.
    assert h5py.check_enum_dtype(tasks.dtype["stream"]) == {"compute": 0, "comm": 1}
    kinds = h5py.check_enum_dtype(tasks.dtype["kind"])
    assert kinds is not None and kinds["collective"] == 4 and kinds["gemm"] == 0, kinds
    # The rounds the iterations were taken in, which compare resamples.
    rounds = g["round_iters"][...]
    assert rounds.sum() == iters and (rounds > 0).all(), rounds
    start, end = g["task_start"][...], g["task_end"][...]
    assert start.shape == (iters, world, ntasks) and end.shape == start.shape
    t = tasks[...]
    real = t["task"] >= 0
    # Real tasks have times, padding has NaN; every task ends after it starts and within its
    # rank's step.
    for it in range(iters):
        assert not np.isnan(start[it][real]).any() and np.isnan(start[it][~real]).all()
        assert (end[it][real] >= start[it][real]).all()
        for r in range(world):
            assert np.nanmax(end[it, r]) <= steps[it, r] + 1e-9
    if a["strategy"] == "comm_only":
        assert (t["kind"][real] == 4).all(), "comm_only must hold collectives only"
    if a["strategy"] == "compute_only":
        assert (t["stream"][real] == 0).all(), "compute_only must hold compute tasks only"

summary = f["summary"][...]
assert len(summary) == len(cases), (len(summary), len(cases))
assert "concurrency" in summary.dtype.names, summary.dtype.names

rows = [r for r in csv.DictReader(l for l in open(csv_path) if not l.startswith("#"))]
doc = json.load(open(json_path))
jcases = doc["tables"][0]["rows"]
assert len(rows) == len(jcases) == len(cases)
for row, jcase in zip(rows, jcases):
    assert row["strategy"] == jcase["strategy"]
    for key in ["t_ms", "t_comp_ms", "t_comm_ms", "speedup", "exposed_comm_ms", "concurrency"]:
        c = row[key]
        j = jcase[key]
        if c == "":
            assert j is None, (key, c, j)
        else:
            assert math.isclose(float(c), float(j), rel_tol=1e-9), (key, c, j)
    # The table's T is the median over iterations of the slowest rank.
    g = [cases[c] for c in cases if cases[c].attrs["strategy"] == row["strategy"]][0]
    median = float(np.median(g["step_seconds"][...].max(axis=1)))
    assert math.isclose(float(row["t_ms"]), median * 1e3, rel_tol=1e-6), (row["t_ms"], median)
    want = concurrency(g)
    if want is None:
        assert row["concurrency"] == "", (row["strategy"], row["concurrency"])
    else:
        assert math.isclose(float(row["concurrency"]), want, rel_tol=1e-6, abs_tol=1e-9), (
            row["strategy"], row["concurrency"], want)
    srow = [s for s in summary if s["case_id"].decode() == row["case_id"]][0]
    assert (math.isnan(srow["concurrency"]) if want is None
            else math.isclose(srow["concurrency"], want, rel_tol=1e-6, abs_tol=1e-9))
assert [r["concurrency"] for r in rows if r["strategy"] == "compute_only"] == [""]
print("schema ok:", len(cases), "cases")
