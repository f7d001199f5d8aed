"""The one output writer: atomic replace of regular files, streaming to devices/FIFOs/stdout, refusals.

* A regular file, or a path that does not exist yet, is written to a temporary sibling, fsynced and
  renamed over the target, so readers never see half a file. The file gets the mode a plain
  ``open(path, "w")`` would give (0666 minus the umask), also when it replaces an older file.
* A symlink is resolved first: its final target is replaced atomically and the link stays a link.
  Never a link another user planted in a world-writable sticky folder (`/tmp`): the kernel's
  ``protected_symlinks`` rule, which resolve-then-rename would get past, is applied here too. Inside
  ``confined_to(root)`` (every pipeline job) a link whose target leaves ``root`` is refused.
* A write that fails (disk full, quota, read-only filesystem, permission) is one ``InputError``
  line naming the output and the reason; no temporary file is left behind.
* A character device (``/dev/null``, a tty) or a FIFO is opened and written to directly (no temp
  file, nothing renamed): replacing it would delete the device or FIFO.
* ``-`` is standard output.
* A directory, a socket or a block device is refused with an ``InputError`` (one ``error:`` line).

``write_many`` stages every regular-file output first and renames only when all are staged, so a
failure while preparing the outputs leaves the previous set whole. ``streaming`` gives a handle for
outputs too large to hold in memory (the same rules: temporary sibling renamed on success). ``replace_dir`` promotes a
finished staging directory. ``refuse_input_overwrite`` keeps a CLI from writing over its inputs.
Nothing else in the package or the scripts renames outputs into place.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from _thread import _local  # threading.local itself: `import threading` costs ≈ 0.7 ms a CLI run
from pathlib import Path

from kerneltrace import records
from kerneltrace.errors import InputError

# typing.TYPE_CHECKING without importing typing: the CLI start-up path imports this module
# (docs/architecture.md, "Heavy imports"); tempfile and shutil are imported where files are staged.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Any, BinaryIO

STDOUT = "-"
_FIX = "name a regular file (or a path that does not exist yet), a character device, a FIFO or '-'"


def output_mode() -> int:
    """The permission bits a newly created file gets under the current umask (0644 with umask 022)."""
    mask = _current_umask()
    return 0o666 & ~mask


def _current_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no read-only query exists; set and restore at once
    os.umask(mask)
    return mask


_confinement = _local()


@contextlib.contextmanager
def confined_to(root: str | os.PathLike[str]) -> Iterator[None]:
    """Within this block (this thread), an output symlink must not lead out of ``root``."""
    previous = getattr(_confinement, "root", None)
    _confinement.root = os.path.realpath(root)
    try:
        yield
    finally:
        _confinement.root = previous


def within_confinement(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` resolves inside the ``confined_to`` root (always outside such a block)."""
    root = getattr(_confinement, "root", None)
    real = os.path.realpath(path)
    return root is None or real == root or real.startswith(os.path.join(root, ""))


def _planted_link(link: Path) -> bool:
    """True for a symlink in a world-writable sticky folder that neither we nor the folder's owner
    own (Linux fs.protected_symlinks: such links are not followed)."""
    try:
        link_info = os.lstat(link)
        folder_info = os.stat(link.parent)
    except OSError:
        return False
    shared = folder_info.st_mode & stat.S_IWOTH and folder_info.st_mode & stat.S_ISVTX
    return bool(shared) and link_info.st_uid not in (os.geteuid(), folder_info.st_uid)


def resolve_output(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` lands in: a symlink's final target, otherwise ``path`` itself."""
    target = Path(path)
    if target.is_symlink():
        hop = target
        for _ in range(40):  # every link on the way, as the kernel would check it
            if not hop.is_symlink():
                break
            if _planted_link(hop):
                raise InputError("output path is a symlink another user owns in a world-writable folder; "
                                 "refusing to follow it", str(path), "remove the link or write elsewhere")
            hop = hop.parent / os.readlink(hop)
        resolved = Path(os.path.realpath(target))
        if resolved.is_symlink():  # realpath gave up: a loop
            raise InputError("output path is a symlink loop", str(path), _FIX)
        if not within_confinement(resolved):
            raise InputError(f"output path is a symlink leading out of the working directory (to {resolved}); "
                             "refusing to follow it", str(path), "remove the link and re-run")
        return resolved
    return target


class WriteError(InputError, OSError):
    """An output that could not be written: one ``error:`` line (an InputError to run_cli), still
    an OSError to callers that handle those."""


def _write_failed(err: OSError, target: Path) -> WriteError:
    """One line for a failed write: which output, why, what to do."""
    return WriteError(f"cannot write the output ({err.strerror or err})", str(target),
                      "free disk space or fix the folder's permissions, then re-run")


def _is_stream(target: Path) -> bool:
    """True for a character device or FIFO, False for a regular file or a new path; raises otherwise."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise InputError(f"cannot use as an output: {err.strerror}", str(target), _FIX) from None
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True
    kind = ("a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")
    raise InputError(f"output path is {kind}; refusing to write there", str(target), _FIX)


def _stream(target: Path, data: bytes) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as err:
        raise _write_failed(err, target) from None


def _stage(target: Path, data: bytes) -> str:
    """Write ``data`` to a fsynced temporary sibling of ``target`` with the umask's mode; its path."""
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise _write_failed(err, target) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), output_mode())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as err:
        _unlink(tmp)
        raise _write_failed(err, target) from None
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` (see the module docstring for what each kind of path gets)."""
    if os.fspath(path) == STDOUT:
        out = sys.stdout
        if hasattr(out, "buffer"):
            out.flush()
            out.buffer.write(data)
            out.buffer.flush()
        else:  # a text-only stream (a test's StringIO)
            out.write(data.decode("utf-8"))
        return Path(STDOUT)
    target = resolve_output(path)
    if _is_stream(target):
        _stream(target, data)
        return target
    tmp = _stage(target, data)
    try:
        os.replace(tmp, target)
    except OSError as err:
        _unlink(tmp)
        raise _write_failed(err, target) from None
    except BaseException:
        _unlink(tmp)
        raise
    return target


@contextlib.contextmanager
def streaming(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary handle whose bytes end up in ``path`` as with ``write_bytes``, written as they come.

    A regular file is written to a temporary sibling and renamed over ``path`` when the block ends
    normally; on an exception the sibling is removed and ``path`` is left as it was."""
    if os.fspath(path) == STDOUT:
        sys.stdout.flush()
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = resolve_output(path)
    if _is_stream(target):
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY)
        with os.fdopen(fd, "wb") as handle:
            yield handle
        return
    import errno
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise _write_failed(err, target) from None
    # what a full disk, a quota or a read-only folder raise from the writes (the body's, the
    # buffer's flush at close, fsync); other errors of the body (reading its inputs) pass as they are
    write_errors = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), output_mode())
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as err:
        _unlink(tmp)
        if isinstance(err, InputError) or err.errno not in write_errors:
            raise
        raise _write_failed(err, target) from None
    except BaseException:
        _unlink(tmp)
        raise


records.cache_writer = write_bytes  # the records' compiled-__init__ cache is written by this writer too


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 text (see ``write_bytes``)."""
    return write_bytes(path, text.encode("utf-8"))


def finite_json(obj: Any, path: str = "$") -> tuple[Any, list[str]]:
    """``obj`` with every NaN/Infinity float replaced by null, and the JSON paths replaced."""
    if isinstance(obj, float) and obj - obj != 0:  # NaN or ±inf (inf - inf is NaN); no math import
        return None, [path]
    if isinstance(obj, dict):
        out, paths = {}, []
        for key, value in obj.items():
            out[key], found = finite_json(value, f"{path}.{key}")
            paths += found
        return out, paths
    if isinstance(obj, (list, tuple)):
        items, paths = [], []
        for index, value in enumerate(obj):
            item, found = finite_json(value, f"{path}[{index}]")
            items.append(item)
            paths += found
        return items, paths
    return obj, []


class _Unusual(Exception):
    """A value `_indented` leaves to json.dumps (a subclass, a non-str key, another type)."""


_INFINITY = float("inf")


def _indented(obj: Any) -> str:
    """``json.dumps(obj, indent=2, allow_nan=False)``, the same bytes in about half the time.

    json's C encoder takes no indent, so an indented dump runs its pure-Python generators (a 2 MB
    hotspot document: ~50 ms). This walks the exact built-in types only (str, int, float, bool,
    None, list, tuple, dict with str keys), and str subclasses (json encodes them as their text,
    before any other test), in json's order with its separators; anything else raises _Unusual
    and the caller dumps with json itself. A non-finite float raises ValueError
    as json does."""
    from json.encoder import encode_basestring_ascii as string

    parts: list[str] = []
    append = parts.append
    float_text, int_text = float.__repr__, int.__repr__

    def value(item: Any, indent: str) -> None:
        kind = type(item)
        if kind is str:
            append(string(item))
        elif kind is int:
            append(int_text(item))
        elif kind is float:
            if item != item or item == _INFINITY or item == -_INFINITY:
                raise ValueError("Out of range float values are not JSON compliant")
            append(float_text(item))
        elif kind is dict:
            if not item:
                append("{}")
                return
            inner = indent + "  "
            between = "," + inner
            append("{" + inner)
            first = True
            for key, member in item.items():
                if type(key) is not str:
                    raise _Unusual
                if not first:
                    append(between)
                first = False
                append(string(key))
                append(": ")
                value(member, inner)
            append(indent + "}")
        elif kind is list or kind is tuple:
            if not item:
                append("[]")
                return
            inner = indent + "  "
            between = "," + inner
            append("[" + inner)
            first = True
            for member in item:
                if not first:
                    append(between)
                first = False
                value(member, inner)
            append(indent + "]")
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif isinstance(item, str):  # a StrEnum (the document's `format`): json writes its text
            append(string(item))
        else:
            raise _Unusual

    value(obj, "\n")
    return "".join(parts)


def json_text(obj: Any) -> str:
    """The JSON text every output uses: indented, trailing newline, never NaN or Infinity.

    A non-finite number becomes null; a top-level object's ``warnings`` list says where and why."""
    try:
        try:
            return _indented(obj) + "\n"
        except (_Unusual, RecursionError):  # json's own walk decides (and words any error)
            return json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n"
    except ValueError:
        pass  # a NaN or infinity somewhere: walk the document (only then, it is slower)
    clean, paths = finite_json(obj)
    if paths and isinstance(clean, dict):
        note = (f"{len(paths)} value(s) were not finite numbers (NaN or infinity) and are null: "
                + ", ".join(paths[:5]) + (", ..." if len(paths) > 5 else ""))
        key = "warnings" if isinstance(clean.get("warnings", []), list) else "non_finite_values"
        clean[key] = [*clean.get(key, []), note]
    return json.dumps(clean, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write JSON (indented, trailing newline; see ``write_bytes``)."""
    return write_text(path, json_text(obj))


def write_many(outputs: Mapping[str | os.PathLike[str], bytes | str]) -> list[Path]:
    """Write several outputs all-or-nothing for the regular files: stage every one, then rename.

    A failure before the renames (disk full, a refused path) leaves every previous output whole."""
    plan: list[tuple[Path, bytes, bool]] = []
    for path, data in outputs.items():
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if os.fspath(path) == STDOUT:
            plan.append((Path(STDOUT), payload, True))
            continue
        target = resolve_output(path)
        plan.append((target, payload, _is_stream(target)))
    staged: list[tuple[str, Path]] = []
    try:
        for target, payload, streamed in plan:
            if not streamed:
                staged.append((_stage(target, payload), target))
    except BaseException:
        for tmp, _target in staged:
            _unlink(tmp)
        raise
    for done, (tmp, target) in enumerate(staged):
        try:
            os.replace(tmp, target)
        except BaseException as err:  # no temp file is left behind (the earlier renames stand)
            for left, _target in staged[done:]:
                _unlink(left)
            if isinstance(err, OSError):
                raise _write_failed(err, target) from None
            raise
    for target, payload, streamed in plan:
        if streamed:
            write_bytes(target, payload)
    return [target for target, _payload, _streamed in plan]


def replace_dir(staging: Path, target: Path) -> None:
    """Rename the finished directory ``staging`` over ``target`` (a crash leaves one complete copy)."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise InputError("output directory path exists and is not a directory", str(target),
                         "remove it or choose another output directory")
    if not target.exists():
        os.replace(staging, target)
        return
    import shutil
    import tempfile

    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    os.replace(target, old / "d")
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def refuse_input_overwrite(outputs: Iterable[str | os.PathLike[str] | None],
                           inputs: Iterable[str | os.PathLike[str] | None]) -> None:
    """Raise InputError when an output would land on an input file or inside an input directory.

    Paths are compared after resolving symlinks, and existing files also by device and inode
    (hard links). ``None`` and ``-`` entries are ignored."""
    given = [Path(p) for p in inputs if p is not None and os.fspath(p) != STDOUT]
    resolved_inputs = [(p, Path(os.path.realpath(p))) for p in given]
    for output in outputs:
        if output is None or os.fspath(output) == STDOUT:
            continue
        out = Path(os.path.realpath(output))
        out_id = _identity(out)
        if out_id is not None and stat.S_ISCHR(os.stat(out).st_mode):
            continue  # /dev/null and friends are never inputs worth protecting
        for original, real in resolved_inputs:
            same = out == real or (out_id is not None and out_id == _identity(real))
            inside = real.is_dir() and real in out.parents
            if same or inside:
                where = "the same file as" if same else "inside the input directory"
                raise InputError(f"output {output} is {where} input {original}; refusing to overwrite an input",
                                 str(output), "write the output somewhere else")
