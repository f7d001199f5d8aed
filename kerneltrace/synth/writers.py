"""Write synthetic captures to disk: decoded ATT dispatch dirs, ATT/discovery run dirs, counter CSVs."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from kerneltrace import atomic
from kerneltrace.errors import InputError
from kerneltrace.synth import csvs
from kerneltrace.synth.simulate import (
    CAT_FLAT,
    CAT_IMMED,
    CAT_JUMP,
    CAT_LDS,
    CAT_NEXT,
    CAT_SALU,
    CAT_SMEM,
    CAT_VALU,
    CAT_VMEM,
    LABEL_ROWS,
    RowTotals,
    WaveRecord,
    decoder_category,
    iter_waves,
    simulate,
)
from kerneltrace.synth.spec import KernelSpec

VARIANTS = ("v3", "v3-develop", "pcsampling", "legacy", "empty", "no-source")
V3_HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
V3_DEVELOP_HEADER = V3_HEADER + ", ServiceType, Issued, Stalled, NotIssuedReasons"
PCS_HEADER = ["ISA", "_", "LineNumber", "Source", "Codeobj", "Vaddr", "Hit", "Latency", "Stall",
              "Idle", "PC_Issued", "PC_Stalled", "Stall_Reasons"]
TOOL_VERSION = "3.0.0"
REALTIME_FREQUENCY_HZ = 100_000_000
PCS_SAMPLE_PERIOD = 64  # cycles between synthetic PC samples
# rocprofiler_pc_sampling_instruction_not_issued_reason_t positions in Stall_Reasons
PCS_REASON_ALU_DEPENDENCY, PCS_REASON_WAITCNT, PCS_REASON_BARRIER_WAIT = 2, 3, 5
PCS_REASON_COUNT = 10
# legacy rocprofv2 inst_type differs from the V3 decoder category only for branches
LEGACY_BRANCH_TYPE, LEGACY_COMMENT_TYPE = 10, 100


def _dumps(obj: object) -> str:
    """The V3 writer's JSON: compact, keys sorted."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


def _instruction_size(asm: str) -> int:
    category = decoder_category(asm)
    if category in (CAT_SMEM, CAT_VMEM, CAT_FLAT, CAT_LDS):
        return 8
    op = asm.split(None, 1)[0]
    if category == CAT_VALU and not op.endswith("_e32"):
        return 8  # VOP3 / MFMA encodings
    if category in (CAT_SALU, CAT_VALU) and "0x" in asm:
        return 8  # 32-bit literal
    return 4


def vaddrs(spec: KernelSpec) -> list[int]:
    """Byte address of each instruction (non-decreasing, encoding-sized steps)."""
    out, address = [], spec.base_vaddr
    for ins in spec.instructions:
        out.append(address)
        address += _instruction_size(ins.asm)
    return out


def source_of(spec: KernelSpec, index: int, with_source: bool) -> str:
    line = spec.instructions[index].line
    if not with_source or line is None or not spec.source_path:
        return ""
    return f"{spec.source_path}:{line}"


def dispatch_dir_name(agent_handle: int, dispatch_id: int) -> str:
    return f"ui_output_agent_{agent_handle}_dispatch_{dispatch_id}"


def _v3_code_rows(spec: KernelSpec, totals: RowTotals | None, with_source: bool,
                  develop: bool) -> list[list]:
    addresses = vaddrs(spec)
    label = ["; " + spec.name, 0, 0, spec.demangled, spec.code_object_id, addresses[0], 0, 0, 0, 0]
    rows = [label + ([0, 0, 0, []] if develop else [])]
    for index, ins in enumerate(spec.instructions):
        row_index = index + LABEL_ROWS
        counts = ([totals.hit[row_index], totals.latency[row_index], totals.stall[row_index],
                   totals.idle[row_index]] if totals else [0, 0, 0, 0])
        row = [ins.asm, 0, row_index, source_of(spec, index, with_source), spec.code_object_id,
               addresses[index], *counts]
        if develop:
            row += [0, 0, 0, []]
        rows.append(row)
    return rows


def _pc_samples(spec: KernelSpec, waves: list[WaveRecord]) -> tuple[list[int], list[int], list[list[int]]]:
    """Synthetic stochastic PC samples: every PCS_SAMPLE_PERIOD cycles, each wave reports its PC."""
    rows = len(spec.instructions) + LABEL_ROWS
    issued, stalled = [0] * rows, [0] * rows
    reasons = [[0] * PCS_REASON_COUNT for _ in range(rows)]
    for wave in waves:
        for time, category, stall, duration, line in wave.instructions:
            for sample in range(time - time % PCS_SAMPLE_PERIOD, time + duration, PCS_SAMPLE_PERIOD):
                if sample < time:
                    continue
                if sample < time + stall:
                    stalled[line] += 1
                    if category == CAT_IMMED:
                        asm = spec.instructions[line - LABEL_ROWS].asm
                        reason = PCS_REASON_BARRIER_WAIT if "barrier" in asm else PCS_REASON_WAITCNT
                    else:
                        reason = PCS_REASON_ALU_DEPENDENCY
                    reasons[line][reason] += 1
                else:
                    issued[line] += 1
    return issued, stalled, reasons


def _pcs_code_rows(spec: KernelSpec, waves: list[WaveRecord], with_source: bool) -> list[list]:
    base = _v3_code_rows(spec, None, with_source, develop=False)
    issued, stalled, reasons = _pc_samples(spec, waves)
    return [row + [issued[i], stalled[i], reasons[i]] for i, row in enumerate(base)]


def _legacy_type(category: int) -> int:
    return LEGACY_BRANCH_TYPE if category in (CAT_JUMP, CAT_NEXT) else category


def _legacy_code(spec: KernelSpec, waves: list[WaveRecord], with_source: bool) -> dict:
    # Legacy rows: [asm, inst_type, pos, source, idx, line_num, hitcount, cycles]; two comment
    # rows first, so instruction i sits at pos i + 2 and idx == line_num == pos - 1.
    offset = 2
    hits = [0] * (len(spec.instructions) + offset)
    cycles = [0] * (len(spec.instructions) + offset)
    for wave in waves:
        for _time, _cat, _stall, duration, line in wave.instructions:
            hits[line] += 1
            cycles[line] += duration
    code = [["; Begin ATT ASM", LEGACY_COMMENT_TYPE, 0, "", 0, 0, 0, 0],
            ["; " + spec.name, LEGACY_COMMENT_TYPE, 0, "", 0, 0, 0, 0]]
    for index, ins in enumerate(spec.instructions):
        pos = index + offset
        code.append([ins.asm, _legacy_type(decoder_category(ins.asm)), pos,
                     source_of(spec, index, with_source), pos - 1, pos - 1, hits[pos], cycles[pos]])
    ranked = sorted((pos for pos in range(offset, len(hits)) if hits[pos]),
                    key=lambda pos: (-cycles[pos], pos))[:10]
    return {"code": code, "top_n": [[pos, hits[pos], 0, cycles[pos]] for pos in ranked]}


def _relines(waves: list[WaveRecord], shift: int) -> list[WaveRecord]:
    """Copies of the waves whose instruction lines point ``shift`` rows further down."""
    out = []
    for wave in waves:
        moved = WaveRecord(**{**wave.__dict__})
        moved.instructions = [[t, c, s, d, line + shift] for t, c, s, d, line in wave.instructions]
        moved.waitcnt = [[w + shift, [[p + shift, k] for p, k in prods]] for w, prods in wave.waitcnt]
        out.append(moved)
    return out


def _wave_json(wave: WaveRecord) -> str:
    return _dumps({
        "duration": wave.end - wave.begin,
        "name": f"SE{wave.se}",
        "num_insts": len(wave.instructions),
        "num_stitched": len(wave.instructions),
        "wave": {"begin": wave.begin, "cu": wave.cu, "end": wave.end, "id": wave.wave_id,
                 "instructions": wave.instructions, "simd": wave.simd, "slot": wave.slot,
                 "timeline": wave.timeline, "waitcnt": wave.waitcnt},
    })


def _legacy_info(wave: WaveRecord) -> dict[str, int]:
    names = {CAT_VALU: "Valu", CAT_SALU: "Salu", CAT_VMEM: "Vmem", CAT_SMEM: "Smem",
             CAT_FLAT: "Flat", CAT_LDS: "Lds", CAT_JUMP: "Br", CAT_NEXT: "Br"}
    info = {key: 0 for key in ("Issue", "Valu", "Valu_stall", "Salu", "Salu_stall", "Vmem",
                               "Vmem_stall", "Smem", "Smem_stall", "Flat", "Flat_stall", "Lds",
                               "Lds_stall", "Br", "Br_stall", "Issue_stall")}
    for _time, category, stall, _duration, _line in wave.instructions:
        info["Issue"] += 1
        name = names.get(category)
        if name:
            info[name] += 1
            info[name + "_stall"] += stall
        elif stall:
            info["Issue_stall"] += stall
    return info


def _legacy_wave_json(wave: WaveRecord) -> str:
    # rocprofv2 wrote insertion-ordered keys with the default ", " / ": " separators.
    return json.dumps({
        "name": "SE",
        "duration": wave.end - wave.begin,
        "wave": {"id": wave.wave_id, "simd": wave.simd, "slot": wave.slot, "begin": wave.begin,
                 "end": wave.end, "info": _legacy_info(wave), "instructions": wave.instructions,
                 "timeline": wave.timeline,
                 "waitcnt": [[w, [[p, i] for i, (p, _k) in enumerate(prods)]]
                             for w, prods in wave.waitcnt]},
        "loop_count": 0,
        "top_n": [],
        "num_stitched": len(wave.instructions),
        "num_insts": len(wave.instructions),
        "websocket_port": 18000,
        "generation_time": "SYNTHETIC",
    })


def _wave_index(waves: list[WaveRecord]) -> dict:
    index: dict = {}
    for wave in waves:
        slot = index.setdefault(str(wave.se), {}).setdefault(str(wave.simd), {}).setdefault(
            str(wave.slot), {})
        slot[str(wave.wv)] = [wave.filename, wave.begin, wave.end]
    return index


def _occupancy_events(spec: KernelSpec, waves: list[WaveRecord]) -> dict[str, list[list[int]]]:
    """[time, cu, simd, slot, is_start, kernel_id] per SE, for the target CU and a few neighbours."""
    events: dict[str, list[list[int]]] = {}
    layout = spec.waves
    for wave in waves:
        per_se = events.setdefault(str(wave.se), [])
        for neighbour in range(layout.other_cus + 1):
            cu = wave.cu if neighbour == 0 else (wave.cu + neighbour) % (layout.other_cus + 2)
            shift = 16 * neighbour
            per_se.append([wave.begin - 68 + shift, cu, wave.simd, wave.slot, 1, 1])
            per_se.append([wave.end + 4 + shift, cu, wave.simd, wave.slot, 0, 1])
    for per_se in events.values():
        per_se.sort()
    return events


def _wstates(waves: list[WaveRecord]) -> dict[int, dict]:
    """Step functions: number of waves in each state from each time on (equal times merged)."""
    deltas: dict[int, dict[int, int]] = {state: {} for state in (1, 2, 3, 4)}
    for wave in waves:
        time = wave.begin
        for state, cycles in wave.timeline:
            if state in deltas:
                deltas[state][time] = deltas[state].get(time, 0) + 1
                deltas[state][time + cycles] = deltas[state].get(time + cycles, 0) - 1
            time += cycles
    out = {}
    for state, changes in deltas.items():
        if not changes:
            continue
        times, counts, level = [], [], 0
        for time in sorted(changes):
            level += changes[time]
            times.append(time)
            counts.append(level)
        out[state] = {"name": f"wstates{state}.json", "state": counts, "time": times}
    return out


def _realtime(spec: KernelSpec, waves: list[WaveRecord]) -> dict:
    clock_mhz = csvs.SYNTH_DEVICES[spec.arch].max_clock_mhz
    out: dict = {}
    realtime_start = 1_700_000_000_000_000 // 10 + spec.seed * 1000
    for se in range(spec.waves.shader_engines):
        se_waves = [w for w in waves if w.se == se]
        first = (min(w.begin for w in se_waves) if se_waves else spec.start_cycle) - 2000
        last = (max(w.end for w in se_waves) if se_waves else spec.start_cycle) + 2000
        ticks = round((last - first) * REALTIME_FREQUENCY_HZ / (clock_mhz * 1_000_000))
        out[f"SE{se}"] = [[first, realtime_start], [last, realtime_start + ticks]]
    out["metadata"] = {"descriptor": "[gfx_clock, realtime_clock]",
                       "frequency": REALTIME_FREQUENCY_HZ}
    return out


def _snapshots(spec: KernelSpec) -> tuple[dict, str]:
    """snapshots.json tree for the source path and the local copy's file name."""
    parts = [p for p in spec.source_path.split("/") if p]
    local = f"source_0_{parts[-1]}"
    node: dict = {}
    tree = {"/": node}
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = local
    return tree, local


def _att_stats_rows(spec: KernelSpec, code_rows: list[list], develop: bool) -> list[list]:
    rows = []
    for row in code_rows:
        source = row[3]
        counts = row[6:10]
        extra = [0, 0, 0] if develop else []
        rows.append([row[4], row[5], row[0], *counts, *extra, source])
    return rows


def write_dispatch_dir(
    root: Path,
    spec: KernelSpec,
    variant: str = "v3",
    *,
    agent_handle: int = 20001,
    dispatch_id: int = 1,
    with_waves: bool = True,
    with_source: bool = True,
    with_realtime: bool = True,
    with_stats_csv: bool = True,
    dir_name: str | None = None,
    waves: list[WaveRecord] | None = None,
) -> Path:
    """Write ``root/ui_output_agent_<h>_dispatch_<d>/`` (+ the sibling stats CSV); return its path.

    The directory is assembled in a temporary sibling and renamed into place, so readers never
    see half a capture; an existing directory of the same name is replaced. ``waves`` overrides
    the simulation (default: ``simulate(spec)``, streamed wave by wave for the V3 variants).
    """
    if variant not in VARIANTS:
        raise InputError(f"unknown synthetic variant {variant!r}", "write_dispatch_dir",
                         f"use one of {', '.join(VARIANTS)}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    name = dir_name or dispatch_dir_name(agent_handle, dispatch_id)
    target = root / name
    with_source = with_source and variant != "no-source" and bool(spec.source_path)
    develop = variant == "v3-develop"
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        def put(file_name: str, text: str) -> None:
            (staging / file_name).write_text(text, encoding="utf-8")

        if variant == "empty":
            stats_rows = _write_empty(put, spec)
        elif variant == "legacy":
            stats_rows = _write_legacy(put, spec, simulate(spec) if waves is None else waves,
                                       with_waves, with_source)
        elif variant == "pcsampling":
            stats_rows = _write_pcsampling(put, spec, simulate(spec) if waves is None else waves,
                                           with_source)
        else:
            stats_rows = _write_v3(put, spec, iter_waves(spec) if waves is None else waves,
                                   with_waves, with_source, with_realtime, develop)
        if with_source and variant != "empty":
            tree, local = _snapshots(spec)
            put("snapshots.json", _dumps(tree))
            put(local, spec.source_text)
        _swap_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if with_stats_csv:
        atomic.write_text(root / f"stats_{name}.csv",
                          csvs.att_stats_csv(stats_rows, develop=develop))
    return target


def _write_empty(put, spec: KernelSpec) -> list[list]:
    put("code.json", _dumps({"code": None, "header": V3_HEADER, "version": TOOL_VERSION}))
    put("filenames.json", _dumps({"counter_names": [], "gfxip": 9, "gfxv": "vega",
                                  "global_begin_time": 0, "version": TOOL_VERSION,
                                  "wave_filenames": {}}))
    put("occupancy.json", _dumps({"dispatches": {"0": "0 / 0x0", "1": spec.name},
                                  "version": TOOL_VERSION}))
    return []


def _write_v3(put, spec: KernelSpec, waves: Iterable[WaveRecord], with_waves: bool,
              with_source: bool, with_realtime: bool, develop: bool) -> list[list]:
    totals = RowTotals.zeros(len(spec.instructions) + LABEL_ROWS)
    kept: list[WaveRecord] = []  # waves without their instruction lists (memory stays small)
    for wave in waves:
        totals.add_wave(wave)
        if with_waves:
            put(wave.filename, _wave_json(wave))
        kept.append(replace(wave, instructions=[], waitcnt=[]))
    # without wave files (e.g. not committed) code.json and filenames.json still describe
    # every wave, as in real captures shipped without them
    code_rows = _v3_code_rows(spec, totals, with_source, develop)
    put("code.json", _dumps({"code": code_rows,
                             "header": V3_DEVELOP_HEADER if develop else V3_HEADER,
                             "version": TOOL_VERSION}))
    put("filenames.json", _dumps({"counter_names": [], "gfxip": 9, "gfxv": "vega",
                                  "global_begin_time": 0, "version": TOOL_VERSION,
                                  "wave_filenames": _wave_index(kept)}))
    occupancy: dict = dict(_occupancy_events(spec, kept))
    occupancy["dispatches"] = {"0": "0 / 0x0", "1": spec.name}
    occupancy["version"] = TOOL_VERSION
    put("occupancy.json", _dumps(occupancy))
    for state, doc in _wstates(kept).items():
        put(f"wstates{state}.json", _dumps(doc))
    if with_realtime:
        put("realtime.json", _dumps(_realtime(spec, kept)))
    return _att_stats_rows(spec, code_rows, develop)


def _write_pcsampling(put, spec: KernelSpec, waves: list[WaveRecord], with_source: bool) -> list[list]:
    code_rows = _pcs_code_rows(spec, waves, with_source)
    put("code.json", _dumps({"code": code_rows, "header": PCS_HEADER, "version": TOOL_VERSION}))
    put("filenames.json", _dumps({
        "counter_names": [], "gfxip": 9, "gfxv": "vega", "global_begin_time": 0,
        "is_pcs_stochastic": True, "pc_sampling": True, "thread_trace": False,
        "version": TOOL_VERSION, "wave_filenames": None}))
    return _att_stats_rows(spec, code_rows, develop=False)


def _write_legacy(put, spec: KernelSpec, waves: list[WaveRecord], with_waves: bool,
                  with_source: bool) -> list[list]:
    legacy_waves = _relines(waves, 1)  # legacy lines are code-array positions (2 comment rows)
    put("code.json", json.dumps(_legacy_code(spec, legacy_waves, with_source)))
    if with_waves:
        for wave in legacy_waves:
            put(wave.filename, _legacy_wave_json(wave))
    ses = range(spec.waves.shader_engines)
    put("filenames.json", json.dumps({
        "wave_filenames": _wave_index(legacy_waves) if with_waves else {},
        "se_filenames": [f"se{se}_info.json" for se in ses],
        "global_begin_time": 0, "gfxv": "vega"}))
    for se in ses:
        put(f"se{se}_info.json", json.dumps({"name": "SE", "websocket_port": 18000,
                                             "generation_time": "SYNTHETIC"}))
        put(f"se{se}_perfcounter.json", json.dumps({"data": []}))
    occupancy: dict = {}
    for se, events in _occupancy_events(spec, waves).items():
        # packed event word; the real bit layout is undocumented, this one is synthetic
        occupancy[se] = [(t << 16) | (cu << 8) | (simd << 4) | (slot << 1) | start
                         for t, cu, simd, slot, start, _k in events]
    occupancy["dispatches"] = {"0": "Addr #0x0", "1": spec.name}
    occupancy["names"] = [f"./att/synthetic_se{se}.att" for se in ses]
    put("occupancy.json", json.dumps(occupancy))
    for state, doc in _legacy_wstates(waves).items():
        put(f"wstates{state}.json", json.dumps(doc))
    put("graph_options.json", json.dumps({"occupancy.png": [f"SE{se}" for se in ses],
                                          "dispatches.png": {"0": "Addr #0x0", "1": spec.name}}))
    put("live.json", json.dumps({"live": 0}))
    return []


def _legacy_wstates(waves: list[WaveRecord], bins: int = 256) -> dict[int, dict]:
    """Legacy wstates0..4.json: waves per state in fixed-size time bins (state 0 = not started)."""
    if not waves:
        return {state: {"data": [0] * bins} for state in range(5)}
    start = min(w.begin for w in waves)
    span = max(w.end for w in waves) - start or 1
    data = {state: [0] * bins for state in range(5)}
    for b in range(bins):
        t = start + (b * span) // bins
        for wave in waves:
            if t < wave.begin or t >= wave.end:
                data[0][b] += 1
                continue
            time = wave.begin
            for state, cycles in wave.timeline:
                if time <= t < time + cycles:
                    data[state][b] += 1
                    break
                time += cycles
    return {state: {"data": values} for state, values in data.items()}


def _swap_into_place(staging: Path, target: Path) -> None:
    """Rename the finished staging directory over ``target`` (replacing an old one)."""
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        os.replace(target, old / "d")
        os.replace(staging, target)
        shutil.rmtree(old)
    else:
        os.replace(staging, target)


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



SYNTHETIC_SOURCE_ROOT = "/synthetic/"
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
    match = re.match(r"^ui_output_agent_(\d+)_dispatch_(\d+)", dispatch_dir.name)
    if match:
        agent, dispatch = match.groups()
        for att in dispatch_dir.parent.glob(f"*_{agent}_shader_engine_*_{dispatch}.att"):
            with att.open("rb") as handle:
                if handle.read(len(_PLACEHOLDER_MAGIC)) == _PLACEHOLDER_MAGIC:
                    return True
    return False
