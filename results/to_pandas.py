#!/usr/bin/env python3
"""Read a fobench results file into pandas DataFrames, for analysis in a notebook.

    from to_pandas import load_summary, load_tasks
    summary = load_summary("results/NAME.h5")      # one row per case, every metric
    tasks = load_tasks("results/NAME.h5", "0003")  # one row per task, rank and iteration

Run as a script it prints both for the first case. Needs h5py and pandas (Debian:
python3-h5py, python3-pandas). A running or interrupted sweep's NAME.h5.partial is fobench's
journal, not HDF5: `fobench report NAME.h5.partial --format csv` reads it (pandas.read_csv).
"""
import sys

import h5py
import numpy as np
import pandas as pd



def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _open(path):
    with open(path, "rb") as f:
        if f.read(8) == b"FOBJRNL\n":
            raise ValueError(
                f"{path} is fobench's journal of a running or interrupted sweep, not HDF5: read "
                f"it with `fobench report {path} --format csv`, or wait for NAME.h5")
    return h5py.File(path, "r")


def _names(dtype):
    """value -> name of an HDF5 enum field (`stream`, `kind`); None for files from before
    they were enums, whose plain numbers are then shown as they are."""
    mapping = h5py.check_enum_dtype(dtype)
    return {v: k for k, v in mapping.items()} if mapping else None


def _name(names, value):
    return names[int(value)] if names else int(value)


def load_summary(path):
    """The /summary table: one row per case, the columns of `fobench report --format csv`
    (times in seconds here, as stored)."""
    with _open(path) as f:
        table = f["summary"][()]
    frame = pd.DataFrame({name: table[name] for name in table.dtype.names})
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(_text)
    return frame


def load_tasks(path, case_id):
    """Every task of every rank and iteration of one case, with start, end and duration in
    seconds from the start of its iteration."""
    with _open(path) as f:
        group = f["cases"][case_id]
        tasks = group["tasks"][()]
        start = group["task_start"][()]  # [iters, world, tasks], NaN padded
        end = group["task_end"][()]
    streams = _names(tasks.dtype["stream"])
    kinds = _names(tasks.dtype["kind"])
    rows = []
    for it in range(start.shape[0]):
        for rank_row in tasks:
            for t in rank_row:
                if t["task"] < 0:
                    continue
                s = start[it, t["rank"], t["task"]]
                e = end[it, t["rank"], t["task"]]
                if np.isnan(s):
                    continue
                rows.append({"iteration": it, "rank": int(t["rank"]), "task": int(t["task"]),
                             "stream": _name(streams, t["stream"]),
                             "kind": _name(kinds, t["kind"]),
                             "label": _text(t["label"]), "bytes": int(t["bytes"]),
                             "flops": float(t["flops"]), "start": s, "end": e,
                             "duration": e - s})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: to_pandas.py RESULTS.h5")
    summary = load_summary(sys.argv[1])
    print(summary[["case_id", "workload", "strategy", "t_median", "exposed_comm"]])
    first = _text(summary["case_id"][0])
    tasks = load_tasks(sys.argv[1], first)
    print(tasks.groupby(["rank", "stream"])["duration"].sum())
