"""Whole synthetic rocprofv3 runs: ATT run dirs, discovery CSVs, counter CSVs, and spotting synthetic dirs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kerneltrace import atomic
from kerneltrace.errors import InputError
from kerneltrace.model.naming import parse_dispatch_name
from kerneltrace.synth import csvs
from kerneltrace.synth.spec import KernelSpec
from kerneltrace.synth.writers import write_dispatch_dir


def dispatch_row(spec: KernelSpec, dispatch_id: int, kernel_id: int, start_ns: int,
                 duration_ns: int, agent: int = 1) -> csvs.DispatchRow:
    """The kernel_trace.csv row rocprofv3 would print for one dispatch of ``spec``."""
    res = spec.resources
    vgpr, accum = csvs.csv_register_counts(spec.arch, res.arch_vgprs, res.accum_vgprs)
    return csvs.DispatchRow(
        dispatch_id=dispatch_id, kernel_id=kernel_id, kernel_name=spec.display_name,
        start_ns=start_ns, end_ns=start_ns + duration_ns, lds_bytes=res.lds_bytes,
        scratch_bytes=res.scratch_bytes, vgpr_count=vgpr, accum_vgpr_count=accum,
        sgpr_count=res.sgprs, workgroup=res.workgroup, grid=res.grid, agent=agent)


def _call_durations(spec: KernelSpec, calls: int) -> list[int]:
    # deterministic ±3 % spread around the spec's typical duration
    return [spec.duration_ns + ((spec.seed * 37 + i * 53) % 7 - 3) * spec.duration_ns // 100
            for i in range(calls)]


def _schedule(specs: Sequence[KernelSpec], calls: int) -> list[tuple[KernelSpec, int, int, int, int, int]]:
    """(spec, call number from 1, dispatch id, kernel id, start ns, duration ns), calls interleaved."""
    out, clock, dispatch_id = [], 1_700_000_000_000_000, 1
    durations = [_call_durations(spec, calls) for spec in specs]
    for call in range(calls):
        for k, spec in enumerate(specs):
            out.append((spec, call + 1, dispatch_id, 8 + k, clock, durations[k][call]))
            clock += durations[k][call] + 4000
            dispatch_id += 1
    return out


def write_att_run(out_dir: Path, specs: Sequence[KernelSpec], output_file: str = "att", *,
                  variant: str = "v3", agent_handle: int = 20001, calls: int = 3,
                  traced_iteration: int = 1, with_waves: bool = True,
                  with_source: bool = True, with_realtime: bool = True) -> list[Path]:
    """Lay out a rocprofv3 ATT run directory (``-d out_dir`` + job ``output_file``).

    Every kernel is called ``calls`` times (dispatches interleaved, ids from 1); call number
    ``traced_iteration`` of each kernel is traced, as ``kernel_iteration_range: "[n]"`` does.
    Returns the dispatch directories written.
    """
    if not specs:
        raise InputError("no kernels given", "write_att_run", "pass at least one KernelSpec")
    if not 1 <= traced_iteration <= calls:
        raise InputError(f"traced_iteration {traced_iteration} outside 1..{calls}",
                         "write_att_run", "choose an iteration that is dispatched")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    arch = specs[0].arch
    schedule = _schedule(specs, calls)
    rows, dirs, code_objects = [], [], {}
    for spec, call, dispatch_id, kernel_id, start, duration in schedule:
        rows.append(dispatch_row(spec, dispatch_id, kernel_id, start, duration))
        code_objects[spec.code_object_id] = spec
        if call != traced_iteration:
            continue
        dirs.append(write_dispatch_dir(out_dir, spec, variant, agent_handle=agent_handle,
                                       dispatch_id=dispatch_id, with_waves=with_waves,
                                       with_source=with_source, with_realtime=with_realtime))
        for se in range(spec.waves.shader_engines):
            atomic.write_bytes(
                out_dir / f"{output_file}_{agent_handle}_shader_engine_{se}_{dispatch_id}.att",
                _att_placeholder(spec, se, dispatch_id))
    for code_object_id, spec in sorted(code_objects.items()):
        atomic.write_text(out_dir / f"{output_file}_{spec.arch}_code_object_id_{code_object_id}.out",
                          _code_object_placeholder(spec))
    atomic.write_text(out_dir / f"{output_file}_kernel_trace.csv", csvs.kernel_trace_csv(rows))
    atomic.write_text(out_dir / f"{output_file}_agent_info.csv", csvs.agent_info_csv(arch))
    return dirs


def _att_placeholder(spec: KernelSpec, se: int, dispatch_id: int) -> bytes:
    return (f"SYNTHETIC ATT PLACEHOLDER (kerneltrace.synth): kernel {spec.name} "
            f"SE {se} dispatch {dispatch_id}; not a real thread trace\n").encode()


def _code_object_placeholder(spec: KernelSpec) -> str:
    return (f"SYNTHETIC CODE OBJECT PLACEHOLDER (kerneltrace.synth), not an ELF file\n"
            f"target: amdgcn-amd-amdhsa--{spec.arch}\nkernel: {spec.name}\n")


def write_discovery_run(out_dir: Path, kernels: Sequence[KernelSpec], output_file: str = "discover",
                        *, calls: int = 5) -> dict[str, Path]:
    """A ``--kernel-trace --stats -f csv`` discovery run: kernel_stats, kernel_trace, agent_info, domain_stats."""
    if not kernels:
        raise InputError("no kernels given", "write_discovery_run", "pass at least one KernelSpec")
    out_dir = Path(out_dir)
    schedule = _schedule(kernels, calls)
    rows = [dispatch_row(spec, d, k, start, dur) for spec, _c, d, k, start, dur in schedule]
    per_kernel: dict[str, list[int]] = {}
    for row in rows:
        per_kernel.setdefault(row.kernel_name, []).append(row.end_ns - row.start_ns)
    all_durations = [row.end_ns - row.start_ns for row in rows]
    paths = {
        "kernel_stats": out_dir / f"{output_file}_kernel_stats.csv",
        "kernel_trace": out_dir / f"{output_file}_kernel_trace.csv",
        "agent_info": out_dir / f"{output_file}_agent_info.csv",
        "domain_stats": out_dir / f"{output_file}_domain_stats.csv",
    }
    atomic.write_text(paths["kernel_stats"], csvs.stats_csv(per_kernel))
    atomic.write_text(paths["kernel_trace"], csvs.kernel_trace_csv(rows))
    atomic.write_text(paths["agent_info"], csvs.agent_info_csv(kernels[0].arch))
    atomic.write_text(paths["domain_stats"], csvs.stats_csv({"KERNEL_DISPATCH": all_durations}))
    return paths


def write_counter_collection(path: Path, rows: Sequence[csvs.CounterRow]) -> Path:
    """Write a long-format ``counter_collection.csv`` (one row per dispatch × counter)."""
    return atomic.write_text(path, csvs.counter_collection_csv(rows))


def counter_rows(spec: KernelSpec, dispatch_id: int, values: dict[str, float], *,
                 start_ns: int = 1_700_000_000_000_000, kernel_id: int = 8) -> list[csvs.CounterRow]:
    """CounterRows for one dispatch of ``spec`` with the given {counter: value}."""
    dispatch = dispatch_row(spec, dispatch_id, kernel_id, start_ns, spec.duration_ns)
    return [csvs.CounterRow(dispatch, name, float(value)) for name, value in values.items()]


_PLACEHOLDER_MAGIC = b"SYNTHETIC "


def is_synthetic_dispatch(dispatch_dir: Path) -> bool:
    """True when a dispatch dir was written by this generator.

    Markers: source paths under /synthetic/ (snapshots.json), or a sibling raw ``.att`` file
    that is one of our placeholders. Reads only small files.
    """
    dispatch_dir = Path(dispatch_dir)
    snapshots = dispatch_dir / "snapshots.json"
    if snapshots.is_file():
        try:
            tree = json.loads(snapshots.read_text(encoding="utf-8", errors="replace"))
        except ValueError:
            tree = None
        if isinstance(tree, dict) and isinstance(tree.get("/"), dict) and "synthetic" in tree["/"]:
            return True
    name = parse_dispatch_name(dispatch_dir)  # the one dispatch-dir name pattern (model.naming)
    if name.agent is not None:
        agent, dispatch = name.agent, name.id
        for att in dispatch_dir.parent.glob(f"*_{agent}_shader_engine_*_{dispatch}.att"):
            with att.open("rb") as handle:
                if handle.read(len(_PLACEHOLDER_MAGIC)) == _PLACEHOLDER_MAGIC:
                    return True
    return False
