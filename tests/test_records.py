"""record classes: the dataclass behaviour the start-up path relies on, and the cache of compiled __init__ code."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltrace import records
from kerneltrace.records import FrozenRecordError, field, record

ROOT = Path(__file__).resolve().parents[1]


@record
class Plain:
    name: str
    count: int = 0
    tags: list = field(default_factory=list)


@record(frozen=True, slots=True)
class Frozen:
    name: str
    size: int | None = None


def test_fields_defaults_factories_equality_and_repr():
    one, two = Plain("a"), Plain("a")
    assert one == two and one.count == 0 and one.tags == [] and one.tags is not two.tags
    one.tags.append(1)
    assert one != two and repr(one) == "Plain(name='a', count=0, tags=[1])"
    assert Plain("b", 2, [3]) == Plain(name="b", count=2, tags=[3])
    with pytest.raises(TypeError):
        Plain()  # a field without default is required


def test_frozen_slot_records_refuse_assignment_and_hash_by_value():
    item = Frozen("x", 3)
    with pytest.raises(FrozenRecordError):
        item.size = 4
    assert hash(item) == hash(Frozen("x", 3)) and not hasattr(item, "__dict__")


def _run(code: str, cache: Path, write: bool) -> subprocess.CompletedProcess:
    """A fresh interpreter whose records cache is ``cache`` (bytecode writing on or off)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    prologue = (f"import kerneltrace.records as r; r.cache_path = lambda: {str(cache)!r}\n"
                "import kerneltrace.atomic\n"
                "from kerneltrace.records import record\n"
                "@record\nclass Point:\n    x: int\n    y: int = 2\n")
    return subprocess.run([sys.executable, "-c", prologue + code], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=True)


def test_compiled_inits_are_cached_like_bytecode_and_reused(tmp_path: Path):
    cache = tmp_path / "inits.marshal"
    _run("print(Point(1))", cache, write=False)
    assert not cache.exists()  # PYTHONDONTWRITEBYTECODE: no cache written, as for .pyc files
    assert _run("print(Point(1))", cache, write=True).stdout == "Point(x=1, y=2)\n"
    stored = marshal.loads(cache.read_bytes())
    (key,) = [source for source in stored if source.startswith("def __init__(self, x, y=_default_y)")]
    # a second run reads the code (the stored one is used: a marked copy shows it) and writes nothing
    stored[key] = compile(key.replace("self.y = y", "self.y = y * 10"), "<record __init__>", "exec")
    cache.write_bytes(marshal.dumps(stored))
    before = cache.stat().st_mtime_ns
    assert _run("print(Point(1, 3))", cache, write=True).stdout == "Point(x=1, y=30)\n"
    assert cache.stat().st_mtime_ns == before


@pytest.mark.parametrize("content", [b"", b"not marshal", marshal.dumps([1, 2]), marshal.dumps({"k": 1})])
def test_an_unreadable_or_foreign_cache_is_ignored_and_replaced(tmp_path: Path, content: bytes):
    cache = tmp_path / "inits.marshal"
    cache.write_bytes(content)
    assert _run("print(Point(5))", cache, write=True).stdout == "Point(x=5, y=2)\n"
    stored = marshal.loads(cache.read_bytes())
    assert isinstance(stored, dict) and any("self.x = x" in key for key in stored)


def test_no_cache_is_written_without_the_projects_writer(tmp_path: Path):
    """kerneltrace.atomic registers the writer; a process that never imported it writes nothing."""
    cache = tmp_path / "inits.marshal"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    code = (f"import sys, kerneltrace.records as r; r.cache_path = lambda: {str(cache)!r}\n"
            "@r.record\nclass Point:\n    x: int\n"
            "print(Point(1), 'kerneltrace.atomic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          check=True)
    assert done.stdout == "Point(x=1) False\n" and not cache.exists()


def test_the_cache_file_sits_in_pycache_beside_the_module():
    path = records.cache_path()
    assert path is not None and Path(path).parent == Path(records.__file__).resolve().parent / "__pycache__"
    assert sys.implementation.cache_tag in Path(path).name
