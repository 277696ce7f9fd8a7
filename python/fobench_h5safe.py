"""Reading a fobench results file (NAME.h5) defensively: fobench_pandas's reader, which hands
back plain arrays for it to make DataFrames of. Needs h5py and numpy, not pandas.

A results file may come from anyone, so it is read as fobench's own reader reads one
(docs/results-schema.md); what it refuses is a ResultsFileError (a ValueError) naming
the file, the object or field (an HDF5 path such as /cases/0003/task_start) and why. Without
these bounds a file of a few KiB can take gigabytes of memory, hang the caller or crash it.

- The path must be a regular file, by lstat before it is opened and by fstat of the one
  descriptor opened (O_NOFOLLOW, O_NONBLOCK): a symbolic link, FIFO, socket, device or directory
  is refused by what it is, before a byte is read, as is a file over MAX_FILE_BYTES (8 GiB) or a
  sparse one (over 1 MiB with less than 1/SPARSE_RATIO = 1/16 of it on disk), whose size would
  otherwise buy a budget its few real bytes do not justify.
- HDF5 reads that descriptor only (h5py's file-object driver: it opens no path, takes no lock),
  in a child process (fork) under a memory limit (RLIMIT_AS: what the caller already maps plus
  CHILD_SLACK_BYTES, 256 MiB, and CHILD_BYTES_PER_FILE_BYTE, 8, per byte of the file) and a
  deadline (CHILD_SECONDS, 10 s, and 1 s per 25 MB): HDF5 1.10 allocates and zeroes whatever
  length a variable-length string declares (4 GiB of memory for one in a 6 KiB file), and
  crashes or loops on some damaged files. Any of those is a ResultsFileError, not a dead or
  hung caller; the child hands back plain arrays, and the DataFrames are made in the caller.
- Objects are reached by hard links only: a soft or external link is refused before it is
  followed (an external link to a FIFO hung the reader), and so is a dataset whose data lives
  elsewhere (external storage, virtual) or is filtered. fobench never compresses, and HDF5's
  deflate inflates a chunk past its declared size (a dataset of 8 KiB took 1 GiB to read), so
  no declared size bounds what a compressed dataset takes.
- Before a dataset is read, its type must be one fobench writes there (numbers and fixed-length
  strings; variable-length strings in /summary only), its shape fobench's (each dimension below
  2^31), the file must store every byte it declares (a dataset never written reads as its fill
  value, from no bytes at all), and its bytes, at least OBJECT_BYTES (1 KiB) per dataset, come
  out of one budget per call: READ_BYTES_PER_FILE_BYTE (4) bytes per byte of the file and
  READ_SLACK_BYTES (1 MiB), as in fobench's own reader. An honest file reads at most its own
  size, whatever is asked; one that reaches a dataset through many hard links runs out.

So a call's memory is a small multiple of the file's size: its arrays within the budget, the
DataFrames made of them (a few times that), and the child's limit beyond. The constants are
this module's attributes, read at each call: a caller who trusts a file beyond them may raise
them here (fobench_pandas.h5safe.CHILD_SECONDS = 60), not on fobench_pandas.

_isolated(path, read, *args) runs read(_Results, *args) in the child and returns its value;
_Results is the file as the child sees it, every object checked before it is read.
"""
import contextlib
import gc
import math
import os
import pickle
import resource
import select
import signal
import stat
import time

import h5py
import numpy as np

try:
    # h5py's lock, which every h5py call holds: held around fork, so that no other thread of the
    # caller is inside h5py or HDF5 when the child is copied (the child would wait for it forever).
    from h5py._objects import phil as _H5PY_LOCK
except ImportError:
    _H5PY_LOCK = contextlib.nullcontext()

# The largest file read at all: well above fobench's largest sweep (100,000 cases, about 48 KiB
# each in a file: 4.8 GB), and below what pandas could hold several times over.
MAX_FILE_BYTES = 8 << 30
# A file longer than SPARSE_MIN_BYTES with less than 1/SPARSE_RATIO of it on disk is sparse:
# fobench writes its files whole. The ratio leaves room for a file system that compresses.
SPARSE_MIN_BYTES = 1 << 20
SPARSE_RATIO = 16
# What one call reads from a file of N bytes: 4 N + 1 MiB, as fobench's own reader, each dataset
# counted at least OBJECT_BYTES (what Python spends on an object beside its values).
READ_BYTES_PER_FILE_BYTE = 4
READ_SLACK_BYTES = 1 << 20
OBJECT_BYTES = 1 << 10
# Every dimension of a results file counts ranks, iterations or tasks: int32.
MAX_DIM = 2**31 - 1
# HDF5 may read a chunk whole: one larger than both its dataset and this is refused (fobench's
# chunks are their datasets' size).
MAX_CHUNK_BYTES = 1 << 20
# The child's room beyond what the caller maps, and its deadline (fobench's: 10 s, 1 s / 25 MB).
CHILD_SLACK_BYTES = 256 << 20
CHILD_BYTES_PER_FILE_BYTE = 8
CHILD_SECONDS = 10.0
CHILD_BYTES_PER_SECOND = 25e6

_JOURNAL_MAGIC = b"FOBJRNL\n"
_NUMBERS = "iufb"  # numpy kinds of integers (enums too), reals and booleans


class ResultsFileError(ValueError):
    """A file this module will not or cannot read: the message names the file, the object or
    field (an HDF5 path such as /cases/0003/step_seconds) and why."""


class _NoSuchCase(KeyError):
    """The case asked for is not in the file: KeyError to the caller, as a dict's missing key.
    (Any other KeyError in the child, h5py's on a damaged file, is a ResultsFileError.)"""


def _refuse(path, where, why):
    return ResultsFileError(f"{path}: {where} {why}" if where else f"{path}: {why}")


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# --- The path: refused by what it is, before HDF5 sees it ----------------------------------

_FILE_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
               (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _check_stat(path, st):
    """Refuses, from its metadata alone, what is not a regular file (opening a FIFO blocks, a
    device may act on being opened, a link may lead anywhere), a file over MAX_FILE_BYTES, and a
    sparse one: the budget grows with a file's size, and holes cost nothing to make."""
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), None)
        what = f"is {kind}, not a regular file" if kind else "is not a regular file"
        raise _refuse(path, "", f"{what}; a results file is read only from a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise _refuse(path, "", f"is {st.st_size} bytes, beyond the {MAX_FILE_BYTES} this "
                                "reader takes (MAX_FILE_BYTES)")
    on_disk = st.st_blocks * 512
    if st.st_size > SPARSE_MIN_BYTES and on_disk * SPARSE_RATIO < st.st_size:
        raise _refuse(path, "", f"is sparse: {st.st_size} bytes long, of which {on_disk} are "
                                "on disk; fobench writes its files whole")


def _open_file(path):
    """A descriptor on `path` and its size, once both lstat (before opening) and fstat (of the
    same inode, as opened) show a regular file of bounded size. O_NOFOLLOW and O_NONBLOCK keep a
    link or a FIFO swapped in between the two from being followed or blocking the open. A path
    that does not exist or cannot be read is OSError, as open() says it."""
    before = os.lstat(path)
    _check_stat(path, before)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
            raise _refuse(path, "", "was replaced while it was being opened")
        _check_stat(path, opened)
        if os.pread(fd, len(_JOURNAL_MAGIC), 0) == _JOURNAL_MAGIC:
            raise _refuse(path, "", "is fobench's journal of a running or interrupted sweep, not "
                                    f"HDF5: read it with `fobench report {path} --format csv`, "
                                    "or wait for NAME.h5")
        return fd, opened.st_size
    except BaseException:
        os.close(fd)
        raise


# --- The child: HDF5 parses the file where its allocations, crashes and loops end nothing else -

def _isolated(path, read, *args):
    """read(_Results, *args) on the file at `path`, run in a child process under a memory limit
    and a deadline; its value is plain arrays and lists, pickled down a pipe (the child is this
    process's own copy, so its pickle is no more trusted than the caller already is). KeyError
    (an absent case) and ResultsFileError come back as they were raised."""
    path = os.fspath(path)
    fd, size = _open_file(path)
    try:
        seconds = CHILD_SECONDS + size / CHILD_BYTES_PER_SECOND
        receive, send = os.pipe()
        try:
            try:
                with _H5PY_LOCK:
                    pid = os.fork()
                if pid == 0:
                    _child(send, path, fd, size, seconds, read, args)  # never returns
            finally:
                os.close(send)  # the parent's copy: the pipe ends when the child does
            kind, value = _reply(path, pid, receive, seconds)
        finally:
            os.close(receive)
    finally:
        os.close(fd)
    if kind == "ok":
        return value
    raise KeyError(value) if kind == "KeyError" else ResultsFileError(value)


def _child(send, path, fd, size, seconds, read, args):
    """The child's whole life: its limits, the read, the reply, and os._exit, which leaves the
    caller's exit handlers and buffered output (the caller's, copied) alone."""
    status = 1
    try:
        gc.disable()  # a collection would touch, and so copy, every object the caller has
        _limit_child(size, seconds)
        try:
            reply = ("ok", read(_Results(path, fd, size), *args))
        except ResultsFileError as error:
            reply = ("ResultsFileError", str(error))
        except _NoSuchCase as error:
            reply = ("KeyError", error.args[0])
        except MemoryError:
            reply = ("ResultsFileError", f"{path}: reading it takes more memory than the reader "
                     f"allows a file of {size} bytes: the file is damaged or crafted")
        except Exception as error:  # h5py's OSError, RuntimeError, ... on a damaged file
            reply = ("ResultsFileError",
                     f"{path}: HDF5 cannot read it: {type(error).__name__}: {error}")
        with os.fdopen(send, "wb") as pipe:
            pipe.write(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        status = 0
    finally:
        os._exit(status)


def _limit_child(size, seconds):
    """No core dumps; CPU time to the deadline (in case the caller dies first); and address space
    to what the child maps now (the caller's, copied) plus CHILD_SLACK_BYTES and
    CHILD_BYTES_PER_FILE_BYTE per byte of the file, where /proc says what it maps."""
    _lower_limit(resource.RLIMIT_CORE, 0)
    _lower_limit(resource.RLIMIT_CPU, math.ceil(seconds) + 1)
    try:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return
    _lower_limit(resource.RLIMIT_AS, mapped + CHILD_SLACK_BYTES + CHILD_BYTES_PER_FILE_BYTE * size)


def _lower_limit(which, value):
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    if soft == resource.RLIM_INFINITY or value < soft:
        resource.setrlimit(which, (value, hard))


def _reply(path, pid, receive, seconds):
    """The child's reply, read until it closes the pipe; a child past the deadline, or left
    running by an interrupt, is killed, and every child is reaped."""
    chunks, end, finished = [], time.monotonic() + seconds, False
    ready = select.poll()  # not select(), which takes no descriptor past 1023
    ready.register(receive, select.POLLIN)
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0 or not ready.poll(left * 1000):
                raise _refuse(path, "", f"was not read within {seconds:.0f} s: HDF5 loops on "
                                        "some damaged files, so it was stopped")
            chunk = os.read(receive, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        finished = True
    finally:
        if not finished:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise _refuse(path, "", f"killed the process reading it ({name}): HDF5 crashes on some "
                                "damaged files, and this is one")
    if not chunks:
        raise _refuse(path, "", "could not be read: the process reading it ended without a "
                                "reply (out of memory?)")
    return pickle.loads(b"".join(chunks))


# --- In the child: every object checked before it is read ------------------------------------

def _link(group, name):
    """What links `name` in `group`, not followed: h5py's HardLink, SoftLink or ExternalLink,
    "user-defined", or None where nothing does."""
    try:
        return group.get(name, getlink=True)
    except TypeError:  # h5py's answer for a user-defined link
        return "user-defined"


def _describe(dtype):
    string = h5py.check_string_dtype(dtype)
    if string is not None:
        return ("variable-length strings" if string.length is None
                else f"strings of {string.length} bytes")
    if dtype.kind == "O":
        return "variable-length values or references"
    return f"values of type {dtype}"


_KIND_WORDS = {"i": "integers", "u": "integers", "f": "reals", "b": "booleans",
               "S": "fixed-length strings"}


def _type_problem(dtype, kinds, text):
    """Why values of `dtype` are not what fobench stores as `kinds` (numpy kind letters), or
    None. Variable-length strings only where `text` allows them (in /summary): HDF5 allocates
    the length each declares, which only the child's limit bounds."""
    if dtype.names is not None or dtype.subdtype is not None:
        return f"holds {dtype}, a nested type fobench never writes"
    string = h5py.check_string_dtype(dtype)
    if dtype.kind in kinds or (text and string is not None and string.length is None):
        return None
    wanted = " or ".join(dict.fromkeys(_KIND_WORDS[k] for k in kinds))
    return f"holds {_describe(dtype)}, where fobench writes {wanted}"


# /summary's attribute report_columns: each report column's key, field, type and factor.
_COLUMN_FIELDS = {"key": "S", "field": "S", "type": "S", "scale": "f"}


class _Results:
    """A results file as the child reads it: through the checked descriptor only, each object
    reached by a hard link, each dataset checked against what fobench writes and charged to the
    call's budget before it is read. Every refusal names the file and the object or field."""

    def __init__(self, path, fd, size):
        self.path = path
        self.left = READ_BYTES_PER_FILE_BYTE * size + READ_SLACK_BYTES
        self._raw = os.fdopen(fd, "rb", buffering=0, closefd=False)
        try:
            self.root = h5py.File(self._raw, "r")
        except Exception as error:  # OSError: not HDF5, or damaged past opening
            raise _refuse(path, "", f"is not an HDF5 file ({error})") from None
        if not (self.text_attr(self.root, "/", "schema") or "").startswith("fobench/"):
            raise _refuse(path, "", "is HDF5 but not a fobench results file (no schema fobench/N)")

    def refuse(self, where, why):
        return _refuse(self.path, where, why)

    def has(self, group, name):
        return _link(group, name) is not None

    def member(self, group, where, name):
        """The object `name` of `group` (at HDF5 path `where`) and its path, reached by a hard
        link only: a soft link may lead anywhere in the file, an external one to another file,
        a FIFO or a device (which hung the reader), and neither is followed."""
        path = f"{where.rstrip('/')}/{name}"
        link = _link(group, name)
        if link is None:
            raise self.refuse(path, "is missing: the schema has it in every results file")
        if not isinstance(link, h5py.HardLink):
            kind = {h5py.SoftLink: "a soft link", h5py.ExternalLink: "an external link"}.get(
                type(link), "a user-defined link")
            raise self.refuse(path, f"is {kind}, which this reader does not follow: a results "
                                    "file links only its own objects")
        try:
            return group[name], path
        except Exception as error:  # h5py's KeyError, OSError, ... on a damaged object
            raise self.refuse(path, f"cannot be opened: {error}") from None

    def group(self, parent, where, name):
        group, path = self.member(parent, where, name)
        if not isinstance(group, h5py.Group):
            raise self.refuse(path, "is not a group")
        return group, path

    def array(self, parent, where, name, ndim, kinds="", fields=None, text=False):
        """The values of dataset `name`, checked (see dataset) and read."""
        dset, path = self.dataset(parent, where, name, ndim, kinds, fields, text)
        return self.read(dset, path)

    def dataset(self, parent, where, name, ndim, kinds="", fields=None, text=False):
        """Dataset `name` and its path, once its storage, type (values of `kinds`, or a compound
        with at least `fields`, a dict of field name to kinds) and shape (`ndim` dimensions) are
        what fobench writes and its bytes are charged to the budget."""
        dset, path = self.member(parent, where, name)
        if not isinstance(dset, h5py.Dataset):
            raise self.refuse(path, "is not a dataset")
        self._check_storage(dset, path)
        try:
            dtype = dset.dtype
        except Exception as error:  # a type h5py has no numpy type for
            raise self.refuse(path, f"has a type fobench never writes: {error}") from None
        self._check_type(dtype, path, kinds, fields, text)
        self.charge(path, self._declared(dset, path, ndim))
        return dset, path

    def read(self, dset, path):
        try:
            return dset[()]
        except Exception as error:  # h5py's OSError, ... on damaged data
            raise self.refuse(path, f"cannot be read: {error}") from None

    def _check_storage(self, dset, path):
        """Refuses, from the creation properties alone (asking a virtual dataset its extent
        already opens its sources), data kept outside the file or filtered: fobench writes
        neither, and HDF5's deflate inflates a chunk past its declared size, so no declared size
        bounds what reading a filtered dataset takes."""
        dcpl = dset.id.get_create_plist()
        layout = dcpl.get_layout()
        if layout == h5py.h5d.VIRTUAL:
            raise self.refuse(path, "is a virtual dataset, whose data would come from other files")
        if layout not in (h5py.h5d.CONTIGUOUS, h5py.h5d.CHUNKED, h5py.h5d.COMPACT):
            raise self.refuse(path, "has a storage layout fobench never writes")
        if dcpl.get_external_count():
            raise self.refuse(path, "keeps its data in external files, outside the results file")
        if dcpl.get_nfilters():
            raise self.refuse(path, "is filtered (compressed): fobench never filters, and what a "
                                    "filter expands to is not bounded by what the file stores")

    def _check_type(self, dtype, path, kinds, fields, text):
        if fields is None:
            problem = _type_problem(dtype, kinds, text)
            if problem:
                raise self.refuse(path, problem)
            return
        if dtype.names is None:
            raise self.refuse(path, f"holds {_describe(dtype)}, not fobench's compound table")
        for name in fields:
            if name not in dtype.names:
                raise self.refuse(path, f"has no field '{name}': the schema has it")
        for name in dtype.names:
            problem = _type_problem(dtype[name], fields.get(name, _NUMBERS + "S"), text)
            if problem:
                raise self.refuse(f"{path} field '{name}'", problem)

    def _declared(self, dset, path, ndim):
        """The bytes reading `dset` takes, once it has `ndim` dimensions below 2^31, the file
        stores every byte it declares (a dataset never written reads as its fill value, from no
        stored bytes at all), and its chunks are no larger than it, or than HDF5's cache."""
        shape = dset.shape
        if shape is None or len(shape) != ndim:
            raise self.refuse(path, f"has shape {shape}, where fobench writes {ndim} dimensions")
        if any(d > MAX_DIM for d in shape):
            raise self.refuse(path, f"has shape {shape}: a dimension beyond 2^31 - 1, the most "
                                    "of any count")
        count = math.prod(shape)
        declared = count * dset.dtype.itemsize
        stored = dset.id.get_storage_size()
        in_file = count * dset.id.get_type().get_size()
        if in_file > stored:
            raise self.refuse(path, f"declares {in_file} bytes but the file stores {stored} for "
                                    "it: the file is damaged or crafted")
        chunk = math.prod(dset.chunks) * dset.dtype.itemsize if dset.chunks else 0
        if chunk > max(declared, MAX_CHUNK_BYTES):
            raise self.refuse(path, f"has chunks of {chunk} bytes, more than its own {declared}")
        return declared

    def charge(self, where, nbytes):
        """Takes a read's bytes (at least OBJECT_BYTES) out of the call's budget, so that no
        file, however many hard links lead to one dataset, reads more than the budget."""
        nbytes = max(nbytes, OBJECT_BYTES)
        if nbytes > self.left:
            raise self.refuse(where, f"would take {nbytes} bytes to read, beyond the {self.left} "
                                     f"left of the budget of a call ({READ_BYTES_PER_FILE_BYTE} "
                                     "bytes per byte of the file, and 1 MiB): the file is "
                                     "damaged or crafted")
        self.left -= nbytes

    def text_attr(self, obj, where, name):
        """Attribute `name` of `obj` (at `where`), one string, or None where obj has none."""
        if name not in obj.attrs:
            return None
        label = f"{where.rstrip('/') or '/'} attribute '{name}'"
        attr = obj.attrs.get_id(name)
        if h5py.check_string_dtype(attr.dtype) is None or attr.shape not in ((), (1,)):
            raise self.refuse(label, f"holds {_describe(attr.dtype)} of shape {attr.shape}, not "
                                     "one string")
        self.charge(label, attr.get_storage_size())
        return _text(np.asarray(self._attr_values(obj, name, label), dtype=object).reshape(-1)[0])

    def report_columns(self, summary):
        """/summary's attribute report_columns as (key, field, type, factor) of each column, or
        None for a file from before it."""
        if "report_columns" not in summary.attrs:
            return None
        label = "/summary attribute 'report_columns'"
        attr = summary.attrs.get_id("report_columns")
        if attr.shape is None or len(attr.shape) != 1:
            raise self.refuse(label, f"has shape {attr.shape}, not one row per column")
        self._check_type(attr.dtype, label, "", _COLUMN_FIELDS, False)
        self.charge(label, attr.shape[0] * attr.dtype.itemsize)
        return [(_text(r["key"]), _text(r["field"]), _text(r["type"]), float(r["scale"]))
                for r in self._attr_values(summary, "report_columns", label)]

    def _attr_values(self, obj, name, label):
        try:
            return obj.attrs[name]
        except Exception as error:  # h5py's OSError, ... on damaged data
            raise self.refuse(label, f"cannot be read: {error}") from None

    def case(self, cases, case_id):
        """The group of case `case_id`, a plain name (HDF5 would walk a path with '/'), and its
        path; KeyError where the file has no such case."""
        plain = isinstance(case_id, str) and case_id not in ("", ".", "..") and "/" not in case_id
        if not plain or not self.has(cases, case_id):
            names = list(cases)
            shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20
                                             else "")
            raise _NoSuchCase(f"{self.path} has no case {case_id!r} (cases: {shown})")
        return self.group(cases, "/cases", case_id)
