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
system /usr/bin/python3 imports; a pyenv, conda or venv python3 may not), and
fobench_h5safe.py beside this file. Times are in milliseconds throughout, as in the report. A
running or interrupted sweep's NAME.h5.partial is fobench's journal, not HDF5: `fobench report
NAME.h5.partial --format csv` reads it, and pandas.read_csv(..., comment="#") reads that.

Bounds. A results file may come from anyone, so it is read as fobench's own reader reads one
(docs/results-schema.md), by fobench_h5safe, whose docstring says what it refuses and
why: links, FIFOs, devices, sparse or oversized files, filtered or external data, types and
shapes fobench never writes, reads past a budget of a few times the file's size, and HDF5's
own crashes, loops and runaway allocations, which a forked child under a memory limit and a
deadline takes instead of the caller. What it refuses is a ResultsFileError (a ValueError,
fp.ResultsFileError) naming the file, the object or field (an HDF5 path such as
/cases/0003/task_start) and why; an absent case is KeyError.

The bounds are attributes of fobench_h5safe, here fp.h5safe, read at each call: a caller who
trusts a file beyond them may raise them there (fp.h5safe.CHILD_SECONDS = 60); setting them on
fp changes nothing.
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

# After the check above, which names what is missing. fp.h5safe: the bounds a caller may set.
import fobench_h5safe as h5safe  # noqa: E402
from fobench_h5safe import ResultsFileError  # noqa: E402  (fp.ResultsFileError, as before)

# For files written before /summary carried its attribute `report_columns` (key, /summary
# field, type, factor): the report's columns as fobench then printed them. Those files' layout
# never changes, so neither does this; t_ci_* and doubts were not in their /summary and read as
# missing. tests/e2e/report_analysis.sh checks it against the report.
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

# The fields of a case's `tasks` table (each its numpy kinds), as the schema has them.
_TASK_FIELDS = {"task": "iu", "stream": "iu", "kind": "iu", "peer": "iu", "bytes": "iu",
                "flops": "fiu", "label": "S"}


def _read_summary(f):
    """/summary's table and report_columns (None for a file from before it), in the child."""
    summary, path = f.dataset(f.root, "/", "summary", 1, fields={}, text=True)
    return f.read(summary, path), f.report_columns(summary)


def _rounds(f, group, where, iters):
    """Each timed iteration's round (0, 1, ...): `round_iters` holds the iterations of each
    round in order; a case from before rounds were recorded is one round."""
    if not f.has(group, "round_iters"):
        return np.zeros(iters, dtype=np.int64)
    counts = f.array(group, where, "round_iters", 1, "iu").astype(np.int64)
    # Each count at most iters, so that their sum cannot wrap around.
    if (counts < 0).any() or (counts > iters).any() or counts.sum() != iters:
        shown = [int(c) for c in counts[:20]] + (["..."] if len(counts) > 20 else [])
        raise f.refuse(f"{where}/round_iters", f"holds {shown}, which do not add up to the "
                                               f"{iters} iterations of step_seconds")
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


def _read_steps(f, case_id):
    """(case id, step_seconds, each iteration's round) of every case or of `case_id`."""
    cases, _ = f.group(f.root, "/", "cases")
    ids = list(cases) if case_id is None else [case_id]
    out = []
    for cid in ids:
        group, path = f.case(cases, cid)
        step = f.array(group, path, "step_seconds", 2, "f")
        out.append((cid, step, _rounds(f, group, path, step.shape[0])))
    return out


def _read_tasks(f, case_id):
    """One case's tasks, task_start, task_end and each iteration's round."""
    cases, _ = f.group(f.root, "/", "cases")
    group, path = f.case(cases, case_id)
    tasks = f.array(group, path, "tasks", 2, fields=_TASK_FIELDS)  # [ranks, tasks]
    start = f.array(group, path, "task_start", 3, "f")              # [iters, ranks, tasks]
    end = f.array(group, path, "task_end", 3, "f")
    if start.shape != end.shape or start.shape[1:] != tasks.shape:
        raise f.refuse(path, f"has task_start {start.shape}, task_end {end.shape} and tasks "
                             f"{tasks.shape}: not [iters, ranks, tasks] and [ranks, tasks]")
    return tasks, start, end, _rounds(f, group, path, start.shape[0])


# --- In the caller: DataFrames from the child's arrays -----------------------------------------

def _column(path, table, key, field, kind, scale):
    """One report column from /summary's `field`; all missing where the file lacks it."""
    count = len(table)
    present = field in (table.dtype.names or ())
    if present and kind != "text" and table.dtype[field].kind not in h5safe._NUMBERS:
        raise ResultsFileError(f"{path}: /summary field '{field}' holds "
                               f"{h5safe._describe(table.dtype[field])}, not the {kind} "
                               f"numbers of report column '{key}'")
    if kind == "text":
        return [h5safe._text(v) for v in table[field]] if present else [None] * count
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
    whose attribute `report_columns` says which field each column shows and its factor; for
    files from before it, as fobench printed them then. A file refused is ResultsFileError."""
    table, spec = h5safe._isolated(path, _read_summary)
    if spec is None:
        spec = _COLUMNS_BEFORE_ATTRIBUTE
    return pd.DataFrame({key: _column(path, table, key, field, kind, scale)
                         for key, field, kind, scale in spec})


_STEP_COLUMNS = ["case_id", "round", "iteration", "rank", "step_ms"]


def load_steps(path, case_id=None):
    """One row per case, timed iteration and rank (of every case, or of `case_id` only): its
    round (0-based; `--rounds` spreads a case's iterations over rounds), iteration (0-based,
    across rounds) and the rank's own step time `step_ms` in ms. A case's step is its slowest
    rank's: steps.groupby(["case_id", "iteration"]).step_ms.max(), whose median is the report's
    t_ms. A `fobench sim` case that stores one period of a ring (stored_ranks) has those ranks
    only; rank r of the world ran as rank r % stored_ranks. An absent case is KeyError."""
    cases = h5safe._isolated(path, _read_steps, case_id)
    if not cases:
        return pd.DataFrame(columns=_STEP_COLUMNS)
    parts = {name: [] for name in _STEP_COLUMNS}
    for cid, step, rounds in cases:
        iters, ranks = step.shape
        parts["case_id"].append(np.full(iters * ranks, cid, dtype=object))
        parts["round"].append(np.repeat(rounds, ranks))
        parts["iteration"].append(np.repeat(np.arange(iters, dtype=np.int64), ranks))
        parts["rank"].append(np.tile(np.arange(ranks, dtype=np.int64), iters))
        parts["step_ms"].append(step.reshape(-1).astype(np.float64) * 1e3)
    return pd.DataFrame({name: np.concatenate(arrays) for name, arrays in parts.items()})


def _names(dtype):
    """value -> name of an HDF5 enum field (`stream`, `kind`); None for files from before
    they were enums, whose plain numbers are then shown as they are."""
    mapping = h5py.check_enum_dtype(dtype)
    return {v: k for k, v in mapping.items()} if mapping else None


def _named(names, values):
    """Each value's name, or the value itself where the enum has no name for it."""
    return [names.get(int(v), int(v)) if names else int(v) for v in values]


def load_tasks(path, case_id):
    """Every task of one case, one row per timed iteration, rank and task: its round and
    iteration (as load_steps numbers them), stream, kind, label, peer, bytes and flops, and
    start_ms, end_ms and duration_ms in milliseconds (as the report's times) from the start of
    its iteration. Tasks without a time (NaN in the file) are left out. An absent case is
    KeyError."""
    tasks, start, end, rounds = h5safe._isolated(path, _read_tasks, case_id)
    it, rank, task = np.nonzero((tasks["task"] >= 0)[np.newaxis] & ~np.isnan(start))
    records = tasks[rank, task]
    start_ms = start[it, rank, task] * 1e3
    end_ms = end[it, rank, task] * 1e3
    return pd.DataFrame({
        "case_id": case_id, "round": rounds[it], "iteration": it.astype(np.int64),
        "rank": rank.astype(np.int64), "task": task.astype(np.int64),
        "stream": _named(_names(tasks.dtype["stream"]), records["stream"]),
        "kind": _named(_names(tasks.dtype["kind"]), records["kind"]),
        "label": [h5safe._text(v) for v in records["label"]],
        "peer": records["peer"].astype(np.int64), "bytes": records["bytes"].astype(np.int64),
        "flops": records["flops"].astype(np.float64),
        "start_ms": start_ms, "end_ms": end_ms, "duration_ms": end_ms - start_ms,
    })


def _main(argv):
    if len(argv) not in (2, 3):
        sys.exit("usage: fobench_pandas.py RESULTS.h5 [CASE_ID]")
    try:
        _print(argv[1], argv[2] if len(argv) == 3 else None)
    except (ResultsFileError, KeyError, OSError) as error:
        # A file or case refused is bad input, exit 2 as in fobench; KeyError's str() quotes.
        print(f"fobench_pandas: {error.args[0] if isinstance(error, KeyError) else error}",
              file=sys.stderr)
        sys.exit(2)


def _print(path, case_id):
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
        if case_id is not None:
            tasks = load_tasks(path, case_id)
            busy = tasks.groupby(["rank", "stream"])["duration_ms"].sum()
            print(f"\nload_tasks: case {case_id}, busy ms per rank and stream, all iterations:")
            print(busy)


if __name__ == "__main__":
    _main(sys.argv)
