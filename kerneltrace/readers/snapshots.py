"""snapshots.json: virtual source path → local copy inside the dispatch dir; safe snippet loading."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from kerneltrace.errors import InputError
from kerneltrace.readers.jsonfile import load_json_file
from kerneltrace.readers.regular import JSON_METADATA_LIMIT, SOURCE_LIMIT, read_regular
from kerneltrace.records import field, record

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
SNAPSHOT_FIX = "delete the offending entry or re-run the decoder; snapshot copies must be plain files inside the dispatch dir"


@record
class SourceIndex:
    """Flattened snapshots.json of one dispatch dir."""

    files: dict[str, Path]                        # virtual path -> local file (inside the dir)
    missing: list[str] = field(default_factory=list)   # virtual paths whose copy is absent
    _by_name: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _cache: dict[Path, tuple[list[str], bool]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for virtual in self.files:
            self._by_name.setdefault(PurePosixPath(virtual).name, []).append(virtual)

    def resolve(self, virtual_path: str) -> Path | None:
        """Local copy of a source path: exact match, else the unique best trailing-path match."""
        if virtual_path in self.files:
            return self.files[virtual_path]
        wanted = PurePosixPath(virtual_path).parts
        if not wanted:
            return None
        candidates = self._by_name.get(wanted[-1], [])
        best: list[str] = []
        best_len = 0
        for candidate in candidates:
            parts = PurePosixPath(candidate).parts
            common = 0
            while common < min(len(parts), len(wanted)) and parts[-1 - common] == wanted[-1 - common]:
                common += 1
            if common > best_len:
                best, best_len = [candidate], common
            elif common == best_len:
                best.append(candidate)
        return self.files[best[0]] if len(best) == 1 else None

    def lines(self, local: Path) -> tuple[list[str], bool]:
        """Lines of a local copy (bytes decoded as UTF-8 with replacement) and whether bytes were replaced."""
        if local not in self._cache:
            data = read_regular(local, "source snapshot", SOURCE_LIMIT)
            try:
                text, replaced = data.decode("utf-8"), False
            except UnicodeDecodeError:
                text, replaced = data.decode("utf-8", errors="replace"), True
            # lines as compilers count them (\n, \r\n, \r): str.splitlines also splits at form
            # feeds, U+2028 and other separators and would shift every later line number
            lines = _LINE_BREAK.split(text)
            self._cache[local] = (lines[:-1] if lines and lines[-1] == "" else lines, replaced)
        return self._cache[local]


def flatten_snapshots(tree: object, where: str) -> dict[str, str]:
    """{"/": {"a": {"b.py": "source_0_b.py"}}} -> {"/a/b.py": "source_0_b.py"} (key "/" is the root)."""
    flat: dict[str, str] = {}

    def walk(node: object, prefix: str) -> None:
        if not isinstance(node, dict):
            raise InputError("snapshots.json must be a nested mapping of path components", where, SNAPSHOT_FIX)
        for key, value in node.items():
            if key == "/" and not prefix:
                path = "/"
            elif prefix.endswith("/"):
                path = prefix + key
            else:
                path = f"{prefix}/{key}" if prefix else key
            if isinstance(value, str):
                flat[path] = value
            else:
                walk(value, path)

    try:
        walk(tree, "")
    except RecursionError:
        raise InputError("snapshots.json is nested too deeply", where, SNAPSHOT_FIX) from None
    return flat


def _safe_local(dispatch_dir: Path, root: Path, name: str, where: str) -> Path:
    """The local copy named by a snapshot entry; refuse anything that could leave the dispatch dir."""
    pure = PurePosixPath(name)
    if not name or pure.is_absolute() or os.path.isabs(name) or ".." in pure.parts or "\\" in name:
        raise InputError(f"snapshot entry {name!r} points outside the dispatch dir", where, SNAPSHOT_FIX)
    local = dispatch_dir / pure
    if local.is_symlink() or local.exists():
        try:
            real = local.resolve()
        except (RuntimeError, OSError) as err:  # symlink loop: Python 3.11 raises RuntimeError
            raise InputError(f"snapshot entry {name!r} cannot be resolved ({err})", where, SNAPSHOT_FIX) from None
        if root != real and root not in real.parents:
            raise InputError(f"snapshot entry {name!r} resolves outside the dispatch dir (to {real})", where, SNAPSHOT_FIX)
    return local


def read_snapshots(dispatch_dir: Path) -> SourceIndex:
    """Index the source copies of a dispatch dir; empty when snapshots.json is absent."""
    dispatch_dir = Path(dispatch_dir)
    path = dispatch_dir / "snapshots.json"
    if not path.exists():
        return SourceIndex({})
    where = str(path)
    flat = flatten_snapshots(load_json_file(path, "snapshots.json", JSON_METADATA_LIMIT), where)
    root = dispatch_dir.resolve()
    files: dict[str, Path] = {}
    missing: list[str] = []
    for virtual, name in flat.items():
        local = _safe_local(dispatch_dir, root, name, where)
        if local.is_file():
            files[virtual] = local
        else:
            missing.append(virtual)
    return SourceIndex(files, missing)
