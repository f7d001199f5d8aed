"""Thread-trace decoder lookup (rocprofv3's search order) and install instructions per ROCm version."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DECODER_NAME = "librocprof-trace-decoder.so"
DEFAULT_ROCM = "/opt/rocm"
RELEASES_URL = "https://github.com/ROCm/rocprof-trace-decoder/releases"


@dataclass(frozen=True)
class DecoderLookup:
    """Where the decoder was searched, and what was found."""

    found: Path | None
    searched: list[str] = field(default_factory=list)
    source: str = ""  # "att_library_path" | "ROCPROF_ATT_LIBRARY_PATH" | "LD_LIBRARY_PATH+ROCm"


def search_dirs(att_library_path: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], str]:
    """The directory list rocprofv3 walks (docs/rocprof-outputs.md §9.1): first non-empty source wins."""
    if att_library_path:
        return [str(p) for p in att_library_path], "att_library_path"
    from_env = [p for p in env.get("ROCPROF_ATT_LIBRARY_PATH", "").split(":") if p]
    if from_env:
        return from_env, "ROCPROF_ATT_LIBRARY_PATH"
    rocm = env.get("ROCM_PATH") or DEFAULT_ROCM
    dirs = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    dirs.append(os.path.join(rocm, "lib"))
    return dirs, "LD_LIBRARY_PATH+ROCm"


def find_decoder(att_library_path: Sequence[str], env: Mapping[str, str]) -> DecoderLookup:
    """Walk each directory recursively for a file whose name contains the decoder name."""
    dirs, source = search_dirs(att_library_path, env)
    for directory in dirs:
        root = Path(directory)
        if not root.is_dir():
            continue
        for dirpath, _dirnames, filenames in os.walk(root):
            for name in sorted(filenames):
                if DECODER_NAME in name:
                    return DecoderLookup(Path(dirpath) / name, dirs, source)
    return DecoderLookup(None, dirs, source)


def rocm_version(version_file: str | os.PathLike[str] | None = None) -> str | None:
    """ROCm version from ``/opt/rocm/.info/version`` (e.g. "7.1.1-38"), or None."""
    path = Path(version_file) if version_file else Path(
        os.environ.get("KERNELTRACE_ROCM_VERSION_FILE", f"{DEFAULT_ROCM}/.info/version"))
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return ".".join(g for g in match.groups() if g is not None) if match else None


def install_instructions(version: str | None) -> str:
    """What to install for this ROCm version (separate plugin for 7.0–7.12, bundled from 7.13)."""
    if version is None:
        return (f"ROCm version unknown (no /opt/rocm/.info/version): install ROCm >= 7.0 and the "
                f"rocprof-trace-decoder release built for it from {RELEASES_URL}")
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) < (7, 0):
        return (f"ROCm {version} has no rocprofv3 --att support: upgrade to ROCm >= 7.0, then install "
                f"the matching rocprof-trace-decoder")
    if (major, minor) >= (7, 13):
        return (f"ROCm {version} ships the decoder with rocprofv3: reinstall rocprofiler-sdk for "
                f"ROCm {version} and check <ROCm>/lib for {DECODER_NAME}")
    return (f"install the rocprof-trace-decoder release built for ROCm {version} from {RELEASES_URL} "
            f"(asset rocprof-trace-decoder-manylinux-2.28-<version>-Linux.sh for ROCm {version}); "
            f"then set att_library_path: [<install dir>/lib] in the config")


def missing_message(lookup: DecoderLookup, version: str | None) -> str:
    searched = ", ".join(lookup.searched) or "(nothing)"
    return (f"{DECODER_NAME} not found (searched via {lookup.source}: {searched}); "
            f"{install_instructions(version)}")
