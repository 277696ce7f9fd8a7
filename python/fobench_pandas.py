#!/usr/bin/env python3
"""fobench results files (NAME.h5) as pandas DataFrames, for notebooks and scripts.

    import sys; sys.path.insert(0, "python")       # the repository's python/ folder
    import fobench_pandas as fp
    summary = fp.load_summary("results/NAME.h5")     # = `fobench report NAME.h5 --format csv`
    steps = fp.load_steps("results/NAME.h5")         # each rank's step time, every iteration
    tasks = fp.load_tasks("results/NAME.h5", "0003") # every task of one case

Run as a script, `python3 python/fobench_pandas.py results/NAME.h5 [CASE_ID]` prints the
summary, each round's median step time and, given a case, its ranks' busy time per stream.

Needs h5py and pandas only, not fobench (Debian: python3-h5py and python3-pandas, which the
system /usr/bin/python3 imports; a pyenv, conda or venv python3 may not). Times are in
milliseconds throughout, as in the report. A running or interrupted sweep's NAME.h5.partial is
fobench's journal, not HDF5: `fobench report NAME.h5.partial --format csv` reads it, and
pandas.read_csv(..., comment="#") reads that.
"""
import sys

try:
    import h5py
    import numpy as np
    import pandas as pd
except ImportError as missing:
    # The first thing a user whose python3 is a pyenv, conda or venv one meets: say which does.
    raise ImportError(
        f"{missing}: fobench_pandas needs h5py and pandas, which {sys.executable} cannot "
        "import; on Debian /usr/bin/python3 can once python3-h5py and python3-pandas are "
        "installed (scripts/deps.sh installs them)") from missing

# For files written before /summary carried its attribute `report_columns` (key, /summary
# field, type, factor): the report's columns as fobench then printed them. Those files' layout
# never changes, so neither does this; t_ci_* and doubts were not in their /summary and read as
# missing. tests/mpi/report_analysis.sh checks it against the report.
_COLUMNS_BEFORE_ATTRIBUTE = [
    ("case_id", "case_id", "text", 1.0), ("workload", "workload", "text", 1.0),
    ("strategy", "strategy", "text", 1.0), ("batch", "batch", "integer", 1.0),
    ("seq", "seq", "integer", 1.0), ("hidden", "hidden", "integer", 1.0),
    ("ffn", "ffn", "integer", 1.0), ("heads", "heads", "integer", 1.0),
    ("dtype", "dtype", "text", 1.0), ("world", "world", "integer", 1.0),
    ("iters", "iters", "integer", 1.0), ("verified", "verified", "boolean", 1.0),
    ("t_ms", "t_median", "real", 1e3), ("t_min_ms", "t_min", "real", 1e3),
    ("t_p90_ms", "t_p90", "real", 1e3), ("t_p99_ms", "t_p99", "real", 1e3),
    ("t_cv", "t_cv", "real", 1.0), ("t_comp_ms", "t_comp", "real", 1e3),
    ("t_comm_ms", "t_comm", "real", 1e3), ("t_lb_ms", "t_lb", "real", 1e3),
    ("exposed_comm_ms", "exposed_comm", "real", 1e3),
    ("slicing_penalty_ms", "slicing_penalty", "real", 1e3),
    ("speedup", "speedup", "real", 1.0), ("ideal_speedup", "ideal_speedup", "real", 1.0),
    ("comm_reduction", "comm_reduction", "real", 1.0),
    ("e2e_reduction", "e2e_reduction", "real", 1.0),
    ("overlap_efficiency", "overlap_efficiency", "real", 1.0),
    ("hidden_frac", "hidden_frac", "real", 1.0), ("overlap_pct", "overlap_pct", "real", 1.0),
    ("tflops", "tflops", "real", 1.0), ("algbw_gbps", "algbw", "real", 1.0),
    ("busbw_gbps", "busbw", "real", 1.0), ("concurrency", "concurrency", "real", 1.0),
    ("t_ci_low_ms", "t_ci_low", "real", 1e3), ("t_ci_high_ms", "t_ci_high", "real", 1e3),
    ("doubts", "doubts", "text", 1.0),
]


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _open(path):
    with open(path, "rb") as f:
        if f.read(8) == b"FOBJRNL\n":
            raise ValueError(
                f"{path} is fobench's journal of a running or interrupted sweep, not HDF5: read "
                f"it with `fobench report {path} --format csv`, or wait for NAME.h5")
    f = h5py.File(path, "r")
    if not _text(f.attrs.get("schema", b"")).startswith("fobench/"):
        f.close()
        raise ValueError(f"{path} is HDF5 but not a fobench results file (no schema fobench/N)")
    return f


def _report_columns(summary):
    """(key, field, type, factor) of each report column, as the file says or, for a file from
    before it said, as fobench printed them then."""
    spec = summary.attrs.get("report_columns")
    if spec is None:
        return _COLUMNS_BEFORE_ATTRIBUTE
    return [(_text(r["key"]), _text(r["field"]), _text(r["type"]), float(r["scale"]))
            for r in spec]


def _column(table, field, kind, scale):
    """One report column from /summary's `field`; all missing where the file lacks it."""
    count = len(table)
    present = field in (table.dtype.names or ())
    if kind == "text":
        return [_text(v) for v in table[field]] if present else [None] * count
    if kind == "integer":
        if present:
            return table[field].astype(np.int64)
        return pd.array([pd.NA] * count, dtype="Int64")
    if kind == "boolean":
        # fobench stores 1 passed, 0 failed, -1 not checked: the last is missing (pd.NA).
        values = table[field].astype(np.int64) if present else np.full(count, -1)
        if (values >= 0).all():
            return values != 0
        return pd.array([None if v < 0 else bool(v) for v in values], dtype="boolean")
    if not present:
        return np.full(count, np.nan)
    return table[field].astype(np.float64) * scale


def load_summary(path):
    """One row per case with exactly the columns of `fobench report PATH --format csv`: the
    same names, order and units (times in ms: t_ms, t_comp_ms, ...; algbw_gbps), in the file's
    case order. `verified` is bool (the nullable "boolean" dtype where a case was not checked),
    integers int64, a value the report leaves empty NaN (None for text). Read from /summary,
    whose attribute `report_columns` says which field each column shows and its factor."""
    with _open(path) as f:
        summary = f["summary"]
        table = summary[()]
        spec = _report_columns(summary)
    return pd.DataFrame({key: _column(table, field, kind, scale)
                         for key, field, kind, scale in spec})


def _case(cases, path, case_id):
    if case_id not in cases:
        raise KeyError(f"{path} has no case {case_id!r} (cases: {', '.join(cases)})")
    return cases[case_id]


def _rounds(group, iters, where):
    """Each timed iteration's round (0, 1, ...): `round_iters` holds the iterations of each
    round in order; a case from before rounds were recorded is one round."""
    if "round_iters" not in group:
        return np.zeros(iters, dtype=np.int64)
    counts = group["round_iters"][()].astype(np.int64)
    if counts.sum() != iters or (counts < 0).any():
        raise ValueError(f"{where}: round_iters {list(counts)} do not add up to {iters} iterations")
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


_STEP_COLUMNS = ["case_id", "round", "iteration", "rank", "step_ms"]


def load_steps(path, case_id=None):
    """One row per case, timed iteration and rank (of every case, or of `case_id` only): its
    round (0-based; `--rounds` spreads a case's iterations over rounds), iteration (0-based,
    across rounds) and the rank's own step time `step_ms` in ms. A case's step is its slowest
    rank's: steps.groupby(["case_id", "iteration"]).step_ms.max(), whose median is the report's
    t_ms. A `fobench sim` case that stores one period of a ring (stored_ranks) has those ranks
    only; rank r of the world ran as rank r % stored_ranks."""
    frames = []
    with _open(path) as f:
        cases = f["cases"]
        for cid in list(cases) if case_id is None else [case_id]:
            group = _case(cases, path, cid)
            step = group["step_seconds"][()]
            iters, ranks = step.shape
            rounds = _rounds(group, iters, f"{path}: case {cid}")
            frames.append(pd.DataFrame({
                "case_id": cid,
                "round": np.repeat(rounds, ranks),
                "iteration": np.repeat(np.arange(iters, dtype=np.int64), ranks),
                "rank": np.tile(np.arange(ranks, dtype=np.int64), iters),
                "step_ms": step.reshape(-1) * 1e3,
            }, columns=_STEP_COLUMNS))
    if not frames:
        return pd.DataFrame(columns=_STEP_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def _names(dtype):
    """value -> name of an HDF5 enum field (`stream`, `kind`); None for files from before
    they were enums, whose plain numbers are then shown as they are."""
    mapping = h5py.check_enum_dtype(dtype)
    return {v: k for k, v in mapping.items()} if mapping else None


def _named(names, values):
    return [names[int(v)] if names else int(v) for v in values]


def load_tasks(path, case_id):
    """Every task of one case, one row per timed iteration, rank and task: its round and
    iteration (as load_steps numbers them), stream, kind, label, peer, bytes and flops, and
    start_ms, end_ms and duration_ms in milliseconds (as the report's times) from the start of
    its iteration. Tasks without a time (NaN in the file) are left out."""
    with _open(path) as f:
        group = _case(f["cases"], path, case_id)
        tasks = group["tasks"][()]          # [ranks, tasks], padding rows have task -1
        start = group["task_start"][()]     # [iters, ranks, tasks], NaN padded
        end = group["task_end"][()]
        rounds = _rounds(group, start.shape[0], f"{path}: case {case_id}")
    it, rank, task = np.nonzero((tasks["task"] >= 0)[np.newaxis] & ~np.isnan(start))
    records = tasks[rank, task]
    start_ms = start[it, rank, task] * 1e3
    end_ms = end[it, rank, task] * 1e3
    return pd.DataFrame({
        "case_id": case_id, "round": rounds[it], "iteration": it.astype(np.int64),
        "rank": rank.astype(np.int64), "task": task.astype(np.int64),
        "stream": _named(_names(tasks.dtype["stream"]), records["stream"]),
        "kind": _named(_names(tasks.dtype["kind"]), records["kind"]),
        "label": [_text(v) for v in records["label"]],
        "peer": records["peer"].astype(np.int64), "bytes": records["bytes"].astype(np.int64),
        "flops": records["flops"].astype(np.float64),
        "start_ms": start_ms, "end_ms": end_ms, "duration_ms": end_ms - start_ms,
    })


def _main(argv):
    if len(argv) not in (2, 3):
        sys.exit("usage: fobench_pandas.py RESULTS.h5 [CASE_ID]")
    path = argv[1]
    wide = pd.option_context("display.width", 160, "display.max_columns", 20,
                             "display.max_colwidth", 60)
    with wide:
        summary = load_summary(path)
        print("load_summary (the columns of `fobench report --format csv`; some of them):")
        print(summary[["case_id", "workload", "strategy", "seq", "world", "verified", "t_ms",
                       "t_comp_ms", "t_comm_ms", "exposed_comm_ms", "speedup", "doubts"]]
              .to_string(index=False))
        steps = load_steps(path)
        slowest = steps.groupby(["case_id", "round", "iteration"])["step_ms"].max()
        print("\nload_steps: median step time (ms, slowest rank) of each case per round:")
        print(slowest.groupby(level=["case_id", "round"]).median().unstack("round"))
        if len(argv) == 3:
            tasks = load_tasks(path, argv[2])
            busy = tasks.groupby(["rank", "stream"])["duration_ms"].sum()
            print(f"\nload_tasks: case {argv[2]}, busy ms per rank and stream, all iterations:")
            print(busy)


if __name__ == "__main__":
    _main(sys.argv)
