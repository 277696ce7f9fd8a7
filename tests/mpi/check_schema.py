"""Checks a fobench results file against DESIGN.md section 5, reading it with h5py."""
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
            "nccl_version", "cuda_version", "blas", "link_emulation", "env"]:
    assert key in system, f"/system attribute {key} missing"
world = int(system["world_size"])
assert world == 2, world
assert system["link_emulation"].startswith("emulated"), system["link_emulation"]

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

rows = [r for r in csv.DictReader(l for l in open(csv_path) if not l.startswith("#"))]
doc = json.load(open(json_path))
assert len(rows) == len(doc["cases"]) == len(cases)
for row, jcase in zip(rows, doc["cases"]):
    assert row["strategy"] == jcase["strategy"]
    for key in ["t_ms", "t_comp_ms", "t_comm_ms", "speedup", "exposed_comm_ms"]:
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
print("schema ok:", len(cases), "cases")
