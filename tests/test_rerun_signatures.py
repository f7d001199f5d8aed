"""kerneltrace.pipeline.rerun: what changes a signature, what does not, and stable dispatch ids."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kerneltrace import synth
from kerneltrace.pipeline import rerun


def _capture(root: Path) -> list[Path]:
    return synth.write_att_run(root, [synth.demo_gemm(), synth.demo_vec_add()], calls=1)


def _touch_older(path: Path) -> None:
    stamp = path.stat().st_mtime - 3600
    os.utime(path, (stamp, stamp))


def test_tree_signature_follows_the_dispatch_list_inputs_only(tmp_path):
    dirs = _capture(tmp_path / "caps")
    base = rerun.tree_signature(tmp_path / "caps")
    assert base == rerun.tree_signature(tmp_path / "caps")  # stable
    wave = next(dirs[0].glob("se*_sm*_sl*_wv*.json"))
    wave.write_text(wave.read_text() + " ")  # a wave file edited in place: not the list's business
    source = next(dirs[0].rglob("*.py"))
    source.write_text(source.read_text() + "#\n")
    assert rerun.tree_signature(tmp_path / "caps") == base
    code = dirs[0] / "code.json"
    code.write_text(code.read_text() + " ")
    _touch_older(code)  # even an older copy of code.json changes it
    changed = rerun.tree_signature(tmp_path / "caps")
    assert changed != base
    csv = next((tmp_path / "caps").glob("*agent_info.csv"))
    csv.write_text(csv.read_text() + "\n")
    assert rerun.tree_signature(tmp_path / "caps") != changed
    after_csv = rerun.tree_signature(tmp_path / "caps")
    shutil.copytree(dirs[1], dirs[1].with_name(dirs[1].name.replace("dispatch_", "dispatch_9")))
    assert rerun.tree_signature(tmp_path / "caps") != after_csv
    (dirs[0] / "se9_sm0_sl0_wv0.json").write_text("{}")  # a wave file more: wave count in the list
    assert rerun.tree_signature(tmp_path / "caps") not in (base, changed, after_csv)


def test_tree_signature_sees_csvs_of_the_bundle_above_but_not_other_captures(tmp_path):
    dirs = _capture(tmp_path / "exp" / "att" / "big")
    meta = tmp_path / "exp" / "meta"
    meta.mkdir()
    (meta / "x_agent_info.csv").write_text("a\n")
    root = dirs[0].parent
    base = rerun.tree_signature(root)
    (meta / "x_agent_info.csv").write_text("a,b\n")  # beside att/: in the bundle of big/'s dirs
    assert rerun.tree_signature(root) != base
    other = tmp_path / "exp" / "other_capture"
    _capture(other)  # exp/ now holds another capture's bundle (dispatch dirs + CSVs): not ours
    base = rerun.tree_signature(root)
    csv = next(other.glob("*agent_info.csv"))
    csv.write_text(csv.read_text() + "\n")
    (meta / "x_agent_info.csv").write_text("a,b,c\n")  # exp/ is outside the bundle now
    assert rerun.tree_signature(root) == base


def test_files_signature_sees_older_copies_and_missing_files(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("[1]")
    first = rerun.files_signature([path])
    path.write_text("[2]")
    _touch_older(path)
    second = rerun.files_signature([path])
    assert second != first
    path.unlink()
    assert rerun.files_signature([path]) not in (first, second)


def test_dispatch_files_lists_everything_inside(tmp_path):
    (directory,) = synth.write_att_run(tmp_path, [synth.demo_vec_add()], calls=1)
    files = rerun.dispatch_files(directory)
    names = {Path(f).relative_to(directory).as_posix() for f in files}
    assert "code.json" in names and any(n.startswith("se") for n in names)
    assert len(files) == sum(1 for p in directory.rglob("*") if p.is_file())


def test_stable_ids_depend_on_the_path_only(tmp_path):
    root = tmp_path / "caps"
    a = root / "big" / "ui_output_agent_38430_dispatch_44"
    b = root / "big" / "ui_output_agent_55287_dispatch_44_after_loc_fix"
    legacy = root / "att" / "flash kernel_v1_ui"
    twin = root / "small" / "ui_output_agent_38430_dispatch_44"
    ids = rerun.stable_ids([a, b, legacy], root)
    assert ids == ["a38430_d44", "a55287_d44_after_loc_fix", "flash-kernel_v1_ui"]
    assert rerun.stable_ids([b], root) == ["a55287_d44_after_loc_fix"]  # others do not matter
    clash = rerun.stable_ids([a, twin], root)
    assert clash[0] != clash[1] and all(i.startswith("a38430_d44-") for i in clash)
    assert all(set(i) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGHIJKLMNOPQRSTUVWXYZ")
               for i in ids + clash)


def test_tree_signature_sees_the_csvs_the_lookup_finds_through_a_symlinked_folder(tmp_path):
    """The signature searches exactly the folders the metadata lookup searches (one definition):
    a CSV in a symlinked sibling folder is found by the lookup, so changing it changes the list."""
    from kerneltrace.model.metadata import AGENT_INFO, nearest

    dirs = _capture(tmp_path / "exp" / "att" / "big")
    for csv in (tmp_path / "exp" / "att" / "big").glob("*.csv"):
        csv.unlink()  # the bundle's own CSVs would shadow the sibling's
    real = tmp_path / "elsewhere" / "meta"
    real.mkdir(parents=True)
    (real / "x_agent_info.csv").write_text("a\n")
    (tmp_path / "exp" / "meta").symlink_to(real)
    assert [p.name for p in nearest(dirs[0], AGENT_INFO)] == ["x_agent_info.csv"]
    root = dirs[0].parent
    base = rerun.tree_signature(root)
    (real / "x_agent_info.csv").write_text("a,b\n")
    assert rerun.tree_signature(root) != base


def _same_size_edit(path: Path) -> None:
    """Change a byte in the middle and keep size and mtime (what `cp -p`, `touch -r`, rsync leave)."""
    info = path.stat()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] = ord("7") if data[middle] != ord("7") else ord("8")
    path.write_bytes(bytes(data))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size and path.stat().st_mtime_ns == info.st_mtime_ns


def test_an_edit_that_keeps_size_and_mtime_changes_the_signatures(tmp_path):
    dirs = _capture(tmp_path / "caps")
    files = rerun.dispatch_files(dirs[0])
    base_files, base_tree = rerun.files_signature(files), rerun.tree_signature(tmp_path / "caps")
    _same_size_edit(dirs[0] / "code.json")
    assert rerun.files_signature(files) != base_files
    assert rerun.tree_signature(tmp_path / "caps") != base_tree
    csv = next((tmp_path / "caps").glob("*kernel_trace.csv"))
    before = rerun.tree_signature(tmp_path / "caps")
    _same_size_edit(csv)
    assert rerun.tree_signature(tmp_path / "caps") != before


def test_symlinked_dispatch_dirs_are_in_the_signatures(tmp_path):
    store = tmp_path / "store"
    real = _capture(store / "one")
    other = _capture(store / "two")
    caps = tmp_path / "caps"
    caps.mkdir()
    base = rerun.tree_signature(caps)
    link = caps / real[0].name
    link.symlink_to(real[0], target_is_directory=True)
    added = rerun.tree_signature(caps)
    assert added != base  # adding a symlinked dispatch dir changes the list
    before = rerun.files_signature(rerun.dispatch_files(link))
    link.unlink()
    link.symlink_to(other[0], target_is_directory=True)  # same name, another capture
    assert rerun.tree_signature(caps) != added
    assert rerun.files_signature(rerun.dispatch_files(link)) != before
