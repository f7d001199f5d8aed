"""Which paths the agent server may read: only under its --root folders, symlinks resolved."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kerneltrace.errors import InputError


@dataclass(frozen=True)
class Roots:
    """The folders a server was started with (resolved); every path it reads must lie under one."""

    folders: tuple[Path, ...]

    @classmethod
    def of(cls, folders: list[str | Path]) -> Roots:
        resolved: list[Path] = []
        for folder in folders or [Path.cwd()]:
            path = Path(folder).expanduser().resolve()
            if not path.is_dir():
                raise InputError("root folder not found", str(folder), "pass --root an existing folder")
            resolved.append(path)
        return cls(tuple(resolved))

    def resolve(self, path: str | Path) -> Path:
        """The real path of ``path`` (relative paths are taken from the first root); InputError
        when it leaves every root once symlinks are resolved, or does not exist."""
        if not isinstance(path, str | os.PathLike) or not str(path).strip():
            raise InputError("no path given", "", "pass a dispatch dir (or a folder) under the server's --root")
        given = Path(path).expanduser()
        candidate = given if given.is_absolute() else self.folders[0] / given
        try:
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            raise InputError("path not found", str(path),
                             "call list_dispatches() to see the dispatch dirs under the roots") from None
        if not any(real == root or root in real.parents for root in self.folders):
            raise InputError("path is outside the server's roots", str(path),
                             "restart the server with --root covering it, or pass a path under "
                             + ", ".join(str(root) for root in self.folders))
        return real

    def name(self, path: Path) -> str:
        """How answers name ``path`` so that it can be passed back: relative to the first root
        when under it (short and stable), else absolute."""
        first = self.folders[0]
        if path == first:
            return "."
        if first in path.parents:
            return str(path.relative_to(first))
        return str(path)
