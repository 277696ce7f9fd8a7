"""Checks python/fobench_pandas.py against `fobench report --format csv|json` of the same file:
load_summary gives the CSV's columns in its order with its values and types, the fallback for
files without /summary's `report_columns` agrees too, and load_steps and load_tasks hold every
rank's iterations in the case's rounds.

    check_pandas.py RESULTS.h5 REPORT.csv REPORT.json PYTHON_DIR SCRATCH_DIR
"""
import csv
import json
import math
import shutil
import subprocess
import sys

import h5py
import numpy as np

h5path, csv_path, json_path, python_dir, scratch = sys.argv[1:6]
sys.path.insert(0, python_dir)
import fobench_pandas as fp  # noqa: E402  (found through python_dir)

with open(csv_path) as f:
    reader = csv.reader(line for line in f if not line.startswith("#"))
    header = next(reader)
    rows = [dict(zip(header, r)) for r in reader]
# JSON names a column by name and unit apart; its columns are the CSV's, in order.
with open(json_path) as f:
    json_columns = json.load(f)["tables"][0]["columns"]
assert len(json_columns) == len(header), (len(json_columns), len(header))
types = dict(zip(header, (c["type"] for c in json_columns)))


def check_column(frame, key, where):
    """frame[key] holds what the CSV's column `key` says, as the type JSON gives it."""
    series = frame[key]
    kind = types[key]
    texts = [r[key] for r in rows]
    if kind == "boolean":
        assert str(series.dtype) in ("bool", "boolean"), (where, key, series.dtype)
        for value, text in zip(series, texts):
            if text == "":
                assert value is None or value is np.nan or str(value) == "<NA>", (key, value)
            else:
                assert isinstance(value, (bool, np.bool_)) and int(value) == int(text), \
                    (where, key, value, text)
    elif kind == "integer":
        assert str(series.dtype) == "int64", (where, key, series.dtype)
        assert [int(v) for v in series] == [int(t) for t in texts], (where, key)
    elif kind == "real":
        assert str(series.dtype) == "float64", (where, key, series.dtype)
        for value, text in zip(series, texts):
            if text == "":
                assert not math.isfinite(value), (where, key, value)
            else:
                # The CSV prints 9 significant digits.
                assert math.isclose(value, float(text), rel_tol=1e-8, abs_tol=1e-300), \
                    (where, key, value, text)
    else:
        assert list(series) == texts, (where, key, list(series), texts)


summary = fp.load_summary(h5path)
assert list(summary.columns) == header, (list(summary.columns), header)
assert len(summary) == len(rows), (len(summary), len(rows))
for key in header:
    check_column(summary, key, "load_summary")

# A file from before /summary had `report_columns`: the loader's own table of that time, whose
# columns must be the report's (in its order; the report may have gained some since), with its
# values. Without t_ci_* and doubts in /summary, as then, those read as missing.
old = f"{scratch}/before_report_columns.h5"
shutil.copy(h5path, old)
with h5py.File(old, "r+") as f:
    del f["summary"].attrs["report_columns"]
legacy = fp.load_summary(old)
position = [header.index(k) for k in legacy.columns]
assert position == sorted(position), ("legacy columns out of the report's order", position)
for key in legacy.columns:
    check_column(legacy, key, "legacy load_summary")
with h5py.File(old, "r+") as f:
    table = f["summary"][()]
    kept = [n for n in table.dtype.names if n not in ("t_ci_low", "t_ci_high", "doubts")]
    del f["summary"]
    f.create_dataset("summary", data=table[kept])
older = fp.load_summary(old)
assert list(older.columns) == list(legacy.columns)
assert older["t_ci_low_ms"].isna().all() and older["doubts"].isna().all(), older
check_column(older, "t_ms", "older load_summary")

# load_steps: iters x ranks rows per case, in the case's rounds; its slowest-rank median is t.
steps = fp.load_steps(h5path)
assert list(steps.columns) == ["case_id", "round", "iteration", "rank", "step_ms"], steps.columns
for col in ("round", "iteration", "rank"):
    assert str(steps[col].dtype) == "int64", (col, steps[col].dtype)
with h5py.File(h5path, "r") as f:
    for r in rows:
        cid = r["case_id"]
        group = f["cases"][cid]
        round_iters = list(group["round_iters"][()])
        own = steps[steps["case_id"] == cid]
        iters, world = int(r["iters"]), int(r["world"])
        assert len(own) == iters * world, (cid, len(own), iters, world)
        assert sorted(set(own["rank"])) == list(range(world)), cid
        assert sorted(set(own["iteration"])) == list(range(iters)), cid
        assert len(round_iters) > 1, (cid, "--rounds gave one round", round_iters)
        per_round = own.groupby("round").size()
        assert list(per_round.index) == list(range(len(round_iters))), (cid, per_round)
        assert [n // world for n in per_round] == round_iters, (cid, per_round, round_iters)
        # Rounds are consecutive runs of iterations.
        first = own.groupby("round")["iteration"].min()
        assert list(first) == list(np.cumsum([0] + round_iters[:-1])), (cid, first)
        np.testing.assert_allclose(own["step_ms"].to_numpy(),
                                   group["step_seconds"][()].reshape(-1) * 1e3)
        slowest = own.groupby("iteration")["step_ms"].max()
        assert math.isclose(slowest.median(), float(r["t_ms"]), rel_tol=1e-8), (cid, r["t_ms"])
one = fp.load_steps(h5path, rows[2]["case_id"])
assert set(one["case_id"]) == {rows[2]["case_id"]} and len(one) == int(rows[2]["iters"]) * 2

tasks = fp.load_tasks(h5path, rows[2]["case_id"])
for col in ("case_id", "round", "iteration", "rank", "task", "stream", "kind", "label",
            "start_ms", "end_ms", "duration_ms"):
    assert col in tasks.columns, (col, list(tasks.columns))
assert set(tasks["rank"]) == {0, 1}
assert set(tasks["iteration"]) == set(range(int(rows[2]["iters"])))
assert set(tasks["round"]) == set(one["round"])
assert (tasks["duration_ms"] >= 0).all() and set(tasks["stream"]) <= {"compute", "comm"}

# Run as a script it prints the summary and the steps.
out = subprocess.run([sys.executable, f"{python_dir}/fobench_pandas.py", h5path,
                      rows[2]["case_id"]], check=True, capture_output=True, text=True).stdout
assert "load_summary" in out and "load_steps" in out and "load_tasks" in out, out
print(f"ok: fobench_pandas: {len(header)} report columns, {len(steps)} steps, {len(tasks)} tasks")
