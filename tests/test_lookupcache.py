"""The per-user cache of kernel_trace lookups by name gives what reading the CSV gives, and is
never trusted for a changed file, another code, or a file still being written.

Every lookup of tests/test_csv_lines.py's odd CSVs (names, kernel filters, dispatch ids, both
file orders) is made with the cache off, then twice with it on (the first stores, the second is
served without reading the CSV): the same row, join, file and warnings each time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_csv_lines import ODD_FILES

from kerneltrace import filecache
from kerneltrace.errors import InputError
from kerneltrace.model import lookupcache, metadata
from kerneltrace.readers import csvs

LOOKUPS = [(["gemm"], None, None), (["gemm"], None, 3), (["absent"], "GEM", None), (["absent"], "a, b", 7),
           (['say "hi"'], None, 2), (["f<a, b>", "f<a, b>.kd"], None, None), ([], "zz", None), (["absent"], None, None)]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    """A cache folder of this test's, storing every CSV at once (no size or settling threshold)."""
    folder = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("KERNELTRACE_CACHE", raising=False)
    monkeypatch.setattr(lookupcache, "MIN_BYTES", 0)
    monkeypatch.setattr(filecache, "SETTLED_NS", 0)
    return folder / "kerneltrace" / "kernel-trace-lookups"


def _match(paths: list[Path], names: list[str], kernel: str | None, dispatch: int | None):
    metadata._cached.cache_clear()
    warnings: list[str] = []
    found = metadata.match_kernel_trace(paths, dispatch, names, kernel, warnings)
    return (found.row.to_dict() if found.row else None), found.join, found.csv, warnings


def _unread(monkeypatch):
    """Reading a CSV that reads without error fails the test (one that fails is read every time)."""
    read = metadata.read_kernel_trace_file

    def refuse(path):
        try:
            read(path)
        except InputError:
            raise
        raise AssertionError(f"{path} read despite a stored lookup")
    monkeypatch.setattr(metadata, "read_kernel_trace_file", refuse)


def _bundle(folder: Path) -> list[Path]:
    folder.mkdir(exist_ok=True)
    paths = []
    for name, text in sorted(ODD_FILES.items()):
        for prefix in ("discover", "run"):
            paths.append(folder / f"{prefix}_{name}_kernel_trace.csv")
            paths[-1].write_bytes(text.encode())
    return paths


@pytest.mark.parametrize(("names", "kernel", "dispatch"), LOOKUPS)
def test_a_stored_lookup_gives_what_the_read_gives(tmp_path: Path, cache: Path, monkeypatch, names, kernel,
                                                   dispatch):
    paths = _bundle(tmp_path / "bundle")
    orders = (paths, paths[::-1], *([path] for path in paths))
    with monkeypatch.context() as off:
        off.setenv("KERNELTRACE_CACHE", "off")
        expected = [_match(order, names, kernel, dispatch) for order in orders]
    assert not cache.exists()
    assert [_match(order, names, kernel, dispatch) for order in orders] == expected  # stores
    assert any(cache.iterdir())
    with monkeypatch.context() as patched:
        if dispatch is None:  # with a dispatch id, the run_* CSVs are read for their Dispatch_Id
            _unread(patched)
        assert [_match(order, names, kernel, dispatch) for order in orders] == expected  # served


def test_a_lookup_with_different_resources_warns_from_the_cache_as_from_the_file(tmp_path: Path, cache: Path,
                                                                                 monkeypatch):
    path = tmp_path / "discover_kernel_trace.csv"
    rows = [f'"KERNEL_DISPATCH",{n},"{"k" if n % 3 else "other"}",{4 + 4 * (n % 2)},64' for n in range(500)]
    path.write_text('"Kind","Dispatch_Id","Kernel_Name","VGPR_Count","Workgroup_Size_X"\n' + "\n".join(rows))
    first = _match([path], ["k"], None, None)
    assert first[3] == [f"{path}: 333 rows match the kernel name with different resources; using the first"]
    _unread(monkeypatch)
    assert _match([path], ["k"], None, None) == first
    assert first[0]["dispatch_id"] == 1 and first[0]["vgpr_count"] == 8


def _one_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "discover_kernel_trace.csv"
    path.write_text(text)
    return path


HEADER = '"Kind","Dispatch_Id","Kernel_Name","VGPR_Count"\n'


def test_a_changed_csv_is_read_again(tmp_path: Path, cache: Path):
    path = _one_file(tmp_path, HEADER + '"KERNEL_DISPATCH",1,"k",8\n')
    assert _match([path], ["k"], None, None)[0]["vgpr_count"] == 8
    before = os.stat(path)
    path.write_text(HEADER + '"KERNEL_DISPATCH",1,"k",4\n')  # same size, same inode
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert _match([path], ["k"], None, None)[0]["vgpr_count"] == 4


def test_another_code_or_a_broken_cache_file_is_a_miss(tmp_path: Path, cache: Path, monkeypatch):
    path = _one_file(tmp_path, HEADER + '"KERNEL_DISPATCH",1,"k",8\n')
    expected = _match([path], ["k"], None, None)
    [stored] = cache.iterdir()
    record = json.loads(stored.read_text())
    record["lookups"] = {key: [record["lookups"][key][0], ["x", "1", "k", "2"], 1, False]
                         for key in record["lookups"]}
    stored.write_text(json.dumps(record))
    assert _match([path], ["k"], None, None)[0]["vgpr_count"] == 2  # the forged entry is used as is...
    monkeypatch.setattr(lookupcache, "FORMAT", lookupcache.FORMAT + 1)
    assert _match([path], ["k"], None, None) == expected  # ...but not by another code, which replaces it
    for broken in ("", "{", "[]", '{"csv": 1}', json.dumps({**record, "lookups": {"x": [1, 2]}})):
        stored.write_text(broken)
        assert _match([path], ["k"], None, None) == expected, broken
    stored.write_text(json.dumps({**json.loads(stored.read_text()),
                                  "lookups": {lookupcache.query_key({"k"}, None): [[], ["a"], 0, True]}}))
    assert _match([path], ["k"], None, None) == expected  # an invalid entry: read again


def test_a_young_or_small_csv_is_not_stored(tmp_path: Path, cache: Path, monkeypatch):
    path = _one_file(tmp_path, HEADER + '"KERNEL_DISPATCH",1,"k",8\n')
    monkeypatch.setattr(filecache, "SETTLED_NS", 3600 * 10**9)
    _match([path], ["k"], None, None)
    assert not cache.exists()
    monkeypatch.setattr(filecache, "SETTLED_NS", 0)
    monkeypatch.setattr(lookupcache, "MIN_BYTES", os.stat(path).st_size + 1)
    _match([path], ["k"], None, None)
    assert not cache.exists()
    monkeypatch.setattr(lookupcache, "MIN_BYTES", os.stat(path).st_size)
    _match([path], ["k"], None, None)
    assert any(cache.iterdir())


def test_a_csv_that_fails_to_read_is_not_stored_and_still_warned_about(tmp_path: Path, cache: Path):
    path = _one_file(tmp_path, HEADER + '"KERNEL_DISPATCH",1,"' + "k" * 200_000 + '",8\n')
    for _ in range(2):
        assert _match([path], ["k"], None, None)[3] == [
            f"ignored {path}: malformed CSV: field larger than field limit (131072)"]
    assert not cache.exists()


def test_the_cache_lives_in_the_users_cache_dir_with_the_umask_mode(tmp_path: Path, cache: Path, monkeypatch):
    (tmp_path / "in").mkdir()
    path = _one_file(tmp_path / "in", HEADER + '"KERNEL_DISPATCH",1,"k",8\n')
    old = os.umask(0o027)
    try:
        _match([path], ["k"], None, None)
    finally:
        os.umask(old)
    assert sorted(p.name for p in path.parent.iterdir()) == ["discover_kernel_trace.csv"]  # nothing beside it
    [stored] = cache.iterdir()
    assert stored.stat().st_mode & 0o777 == 0o640
    info = os.stat(path)
    assert stored.name == f"{info.st_dev:x}-{info.st_ino:x}.json"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert lookupcache.cache_dir() == str(tmp_path / "home" / ".cache" / "kerneltrace" / "kernel-trace-lookups")
    monkeypatch.setenv("KERNELTRACE_CACHE", "off")
    assert lookupcache.cache_dir() is None


def test_the_table_cells_rebuild_the_row(tmp_path: Path):
    path = _one_file(tmp_path, HEADER + '"KERNEL_DISPATCH",1,"k",8,extra\n"KERNEL_DISPATCH",2,"k"\n')
    table = csvs.read_kernel_trace_table(path)
    for at in range(len(table)):
        assert csvs.KernelTraceTable(table.header, [table.cells(at)], str(path)).row(0) == table.row(at)


def test_a_csv_the_dispatch_id_search_reads_is_not_stored(tmp_path: Path, cache: Path):
    path = tmp_path / "run_kernel_trace.csv"
    path.write_text(HEADER + '"KERNEL_DISPATCH",1,"k",8\n')
    assert _match([path], ["k"], None, 5)[1] == "kernel_name"  # no row with Dispatch_Id 5: by name
    assert not cache.exists()
    assert _match([path], ["k"], None, None)[1] == "kernel_name"  # no dispatch id: stored
    assert any(cache.iterdir())
