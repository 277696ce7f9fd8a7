"""Checks python/fobench_pandas.py against `fobench report --format csv|json` of the same file:
load_summary gives the CSV's columns in its order with its values and types, the fallback for
files without /summary's `report_columns` agrees too, and load_steps and load_tasks hold every
rank's iterations in the case's rounds. Then hostile files made from it: each attack found on
the reader (an external link to a FIFO, a gzip bomb, a missing field, a path that is a link,
FIFO, device, directory or sparse file, ...) is a ResultsFileError naming the file and the
object, within seconds and in little memory (the FIFO attacks run in a subprocess with a
timeout, so that a reader that blocks fails the check rather than hanging it).

    check_pandas.py RESULTS.h5 REPORT.csv REPORT.json PYTHON_DIR SCRATCH_DIR
"""
import csv
import json
import math
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import zlib

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


# --- Hostile files: each attack on the reader, refused ---------------------------------------

# The most this process, or a child it reaped, may have held: every attack below made the reader
# before take 1 to 4 GiB, or block forever.
PEAK_MIB = 512
REFUSE_SECONDS = 5


def peak_mib():
    return max(resource.getrusage(who).ru_maxrss
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


def check_refusal(name, path, pattern, message, took):
    assert message is not None, f"{name}: {path} was read"
    assert str(path) in message and pattern in message, (name, pattern, message)
    assert took < REFUSE_SECONDS, (name, took, message)
    print(f"ok: hostile: {name}: {message} ({took:.2f} s)")


def refused(name, path, pattern, call="load_summary", *args):
    """fp.<call>(path, *args) is a ResultsFileError naming the file and `pattern`, within
    REFUSE_SECONDS, and no process has grown past PEAK_MIB."""
    began, message = time.monotonic(), None
    try:
        getattr(fp, call)(path, *args)
    except fp.ResultsFileError as error:
        message = str(error)
    check_refusal(name, path, pattern, message, time.monotonic() - began)
    assert peak_mib() < PEAK_MIB, (name, peak_mib(), message)


# refused()'s attempts in a subprocess, each call's message and time as a JSON line.
REFUSAL_IN_SUBPROCESS = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import fobench_pandas as fp
for call, path in zip(sys.argv[2::2], sys.argv[3::2]):
    began, message = time.monotonic(), None
    print(json.dumps([call, path]), flush=True)
    try:
        getattr(fp, call)(path)
    except fp.ResultsFileError as error:
        message = str(error)
    print(json.dumps([message, time.monotonic() - began]), flush=True)
"""


def refused_in_subprocess(attacks):
    """refused() for each (name, path, pattern, call), in a subprocess killed after 30 s: a
    reader that opens a FIFO blocks forever, and must fail the check, not hang it."""
    argv = [a for _, path, _, call in attacks for a in (call, path)]
    try:
        run = subprocess.run([sys.executable, "-c", REFUSAL_IN_SUBPROCESS, python_dir, *argv],
                             capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as stopped:
        last = (stopped.stdout or b"").decode().splitlines()[-1:]  # bytes, despite text=True
        raise AssertionError(f"the reader blocked in {last}") from None
    assert run.returncode == 0, run.stderr
    for (name, path, pattern, _), line in zip(attacks, run.stdout.splitlines()[1::2],
                                              strict=True):
        check_refusal(name, path, pattern, *json.loads(line))


def hostile(name, change):
    """A copy of the real file, with change(h5py.File) made to it."""
    path = f"{scratch}/hostile_{name}.h5"
    shutil.copy(h5path, path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def replaced(name, make):
    """The change that replaces object `name` with make(file, name)."""
    def change(f):
        del f[name]
        make(f, name)
    return change


def removed(name):
    return lambda f: f.__delitem__(name)


fifo = f"{scratch}/fifo"
os.mkfifo(fifo)


def external_link_to_fifo(f, name):
    f[name] = h5py.ExternalLink(fifo, "/x")


def virtual_of_fifo(f, name):
    layout = h5py.VirtualLayout(shape=(4, 2), dtype="f8")
    layout[:] = h5py.VirtualSource(fifo, "x", shape=(4, 2))
    f.create_virtual_dataset(name, layout)


def stored_in_fifo(f, name):
    f.create_dataset(name, shape=(4, 2), dtype="f8", external=[(fifo, 0, 64)])


def soft_link(f, name):
    f[name] = h5py.SoftLink("/cases/0000/step_seconds")


def strings(f, name):
    f.create_dataset(name, data=np.array([["1", "2"]] * 4, dtype=object),
                     dtype=h5py.string_dtype())


def without_label(f):
    tasks = f["cases/0002/tasks"][()]
    del f["cases/0002/tasks"]
    f["cases/0002/tasks"] = tasks[[field for field in tasks.dtype.names if field != "label"]]


def zeros_deflate(total, block=1 << 20):
    """A zlib stream of `total` zero bytes, made in milliseconds: after a full flush a block
    compresses the same each time, and the Adler-32 of n zeros is (n mod 65521, 1)."""
    z = zlib.compressobj(9)
    first = z.compress(bytes(block)) + z.flush(zlib.Z_FULL_FLUSH)
    again = z.compress(bytes(block)) + z.flush(zlib.Z_FULL_FLUSH)
    end = z.flush()[:-4]
    checksum = (total % 65521) << 16 | 1
    return first + again * (total // block - 1) + end + struct.pack(">I", checksum)


def gzip_bomb(f, name):
    """2 GiB of zeros, gzip-chunked 8 MiB at a time, each chunk written precompressed (8 KiB)."""
    rows = 1 << 19
    d = f.create_dataset(name, shape=(256 * rows, 2), dtype="f8", chunks=(rows, 2),
                         compression="gzip")
    chunk = zeros_deflate(rows * 2 * 8)
    for i in range(256):
        d.id.write_direct_chunk((i * rows, 0), chunk)


def chunk_bomb(f, name):
    """4096 x 2 doubles (64 KiB) in one gzip chunk that inflates to 1 GiB. (A chunk in fobench's
    file format stores at most 256 times its declared size, whence 64 KiB.)"""
    d = f.create_dataset(name, shape=(4096, 2), dtype="f8", chunks=(4096, 2),
                         compression="gzip")
    d.id.write_direct_chunk((0, 0), zeros_deflate(1 << 30))


def never_written(f, name):
    """2 GiB that the file does not store: HDF5 reads the fill value, from no bytes at all."""
    f.create_dataset(name, shape=(1 << 27, 2), dtype="f8", chunks=(1 << 16, 2))


def one_dataset_many_links(f):
    """Every case's step_seconds a hard link to one 2 MiB dataset: stored once, read 8 times."""
    for cid in f["cases"]:
        del f[f"cases/{cid}/round_iters"]
    del f["cases/0000/step_seconds"]
    f["cases/0000/step_seconds"] = np.zeros((1 << 17, 2))
    for cid in list(f["cases"])[1:]:
        del f[f"cases/{cid}/step_seconds"]
        f[f"cases/{cid}/step_seconds"] = f["cases/0000/step_seconds"]


def long_string(name, make, find):
    """A small file made by make(h5py.File), with the length in the variable-length string's
    descriptor at find(file, its bytes) set to 2^31 - 1: HDF5 allocates and zeroes that much
    before it reads the string (4 GiB, in the reader before)."""
    path = f"{scratch}/hostile_{name}.h5"
    with h5py.File(path, "w") as f:
        make(f)
    data = bytearray(open(path, "rb").read())
    with h5py.File(path, "r") as f:
        at = find(f, data)
    assert at > 0, (name, "no descriptor found")
    data[at:at + 4] = struct.pack("<I", 2**31 - 1)
    open(path, "wb").write(data)
    return path


def schema_only(f):
    f.attrs["schema"] = "fobench/1"  # a variable-length string, as fobench writes it


def schema_descriptor(f, data):
    # Its length (9), then the address of the file's one global heap, which holds the text.
    return data.find(struct.pack("<IQ", 9, data.find(b"GCOL")))


def summary_with_doubts(f):
    f.attrs["schema"] = np.bytes_("fobench/1")
    f["summary"] = np.array([(b"0000", "doubt")],
                            dtype=[("case_id", "S8"), ("doubts", h5py.string_dtype())])


def doubts_descriptor(f, data):
    return f["summary"].id.get_offset() + 8  # after case_id's 8 bytes


refused_in_subprocess([
    ("path a FIFO", fifo, "is a FIFO", "load_summary"),
    ("/summary an external link to a FIFO",
     hostile("external_link", replaced("summary", external_link_to_fifo)),
     "/summary is an external link", "load_summary"),
    ("step_seconds a virtual dataset of a FIFO",
     hostile("virtual", replaced("cases/0000/step_seconds", virtual_of_fifo)),
     "/cases/0000/step_seconds is a virtual dataset", "load_steps"),
    ("step_seconds stored in a FIFO",
     hostile("external_storage", replaced("cases/0000/step_seconds", stored_in_fifo)),
     "/cases/0000/step_seconds keeps its data in external files", "load_steps"),
])

link = f"{scratch}/link.h5"
os.symlink(h5path, link)
refused("path a symbolic link", link, "is a symbolic link")
refused("path a directory", scratch, "is a directory")
refused("path a device", "/dev/null", "is a character device")
sparse = f"{scratch}/sparse.h5"
with open(sparse, "wb") as f:
    f.truncate(10 << 30)
refused("path a 10 GB sparse file", sparse, "beyond the 8589934592")
with open(sparse, "wb") as f:
    f.truncate(100 << 20)
refused("path a 100 MB sparse file", sparse, "is sparse")

refused("/summary a soft link", hostile("soft_link", replaced("summary", soft_link)),
        "/summary is a soft link")
refused("no /summary", hostile("no_summary", removed("summary")), "/summary is missing")
refused("no task_start", hostile("no_task_start", removed("cases/0002/task_start")),
        "/cases/0002/task_start is missing", "load_tasks", "0002")
refused("no tasks field label", hostile("no_label", without_label),
        "/cases/0002/tasks has no field 'label'", "load_tasks", "0002")
refused("step_seconds of strings",
        hostile("strings", replaced("cases/0000/step_seconds", strings)),
        "/cases/0000/step_seconds holds variable-length strings", "load_steps")

# Datasets replaced by what a crafted file can declare: (name, file, replacement, message).
for name, attack, change, pattern in [
        ("gzip bomb (2 GiB of zeros)", "gzip_bomb", gzip_bomb,
         "/cases/0000/step_seconds is filtered"),
        ("64 KiB inflating to 1 GiB", "chunk_bomb", chunk_bomb,
         "/cases/0000/step_seconds is filtered"),
        ("2 GiB never written", "never_written", never_written,
         "declares 2147483648 bytes but the file stores 0")]:
    refused(name, hostile(attack, replaced("cases/0000/step_seconds", change)), pattern,
            "load_steps")
refused("one dataset through 8 hard links", hostile("many_links", one_dataset_many_links),
        "of the budget", "load_steps")
refused("schema 2 GiB long", long_string("long_schema", schema_only, schema_descriptor),
        "/ attribute 'schema' cannot be read")
refused("doubts 2 GiB long", long_string("long_doubts", summary_with_doubts, doubts_descriptor),
        "/summary cannot be read")

# The reader's child stopped at its deadline, or dead of a crash, is the file's refusal.
deadline = fp.h5safe.CHILD_SECONDS, fp.h5safe.CHILD_BYTES_PER_SECOND
fp.h5safe.CHILD_SECONDS, fp.h5safe.CHILD_BYTES_PER_SECOND = 0.0, math.inf
refused("past the deadline", h5path, "was not read within")
fp.h5safe.CHILD_SECONDS, fp.h5safe.CHILD_BYTES_PER_SECOND = deadline
began = time.monotonic()
try:
    fp.h5safe._isolated(h5path, lambda f: os.kill(os.getpid(), signal.SIGSEGV))
    raise AssertionError("a crash in the reader's child went unnoticed")
except fp.ResultsFileError as error:
    check_refusal("HDF5 crashing", h5path, "(SIGSEGV)", str(error), time.monotonic() - began)

# A thread of the caller inside h5py when the reader forks must not leave its child waiting for
# h5py's lock: ten reads beside a thread reading the file all the while, each within 3 s.
reading = threading.Event()


def read_all_the_while():
    with h5py.File(h5path, "r") as f:
        while not reading.is_set():
            for cid in f["cases"]:
                f["cases"][cid]["step_seconds"][()]


beside = threading.Thread(target=read_all_the_while)
beside.start()
fp.h5safe.CHILD_SECONDS = 3.0
try:
    for _ in range(10):
        assert len(fp.load_summary(h5path)) == len(rows)
finally:
    fp.h5safe.CHILD_SECONDS = deadline[0]
    reading.set()
    beside.join()
print("ok: fobench_pandas: read beside a thread inside h5py")

try:
    fp.load_tasks(h5path, "../cases/0000")
    raise AssertionError("a case id that is a path was read")
except KeyError as error:
    assert "has no case '../cases/0000'" in error.args[0], error
print(f"ok: fobench_pandas: hostile files refused, peak {peak_mib():.0f} MiB")
