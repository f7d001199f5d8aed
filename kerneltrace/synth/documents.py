"""Contents of one synthetic dispatch dir: code.json variants, wave files, index/occupancy/state JSONs."""

from __future__ import annotations

import json

from kerneltrace.synth import csvs
from kerneltrace.synth.categories import (
    CAT_FLAT,
    CAT_IMMED,
    CAT_JUMP,
    CAT_LDS,
    CAT_NEXT,
    CAT_SALU,
    CAT_SMEM,
    CAT_VALU,
    CAT_VMEM,
    decoder_category,
    instruction_size,
)
from kerneltrace.synth.simulate import LABEL_ROWS, RowTotals, WaveRecord
from kerneltrace.synth.spec import KernelSpec

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


def dumps(obj: object) -> str:
    """The V3 writer's JSON: compact, keys sorted."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


def vaddrs(spec: KernelSpec) -> list[int]:
    """Byte address of each instruction (non-decreasing, encoding-sized steps)."""
    out, address = [], spec.base_vaddr
    for ins in spec.instructions:
        out.append(address)
        address += instruction_size(ins.asm)
    return out


def source_of(spec: KernelSpec, index: int, with_source: bool) -> str:
    line = spec.instructions[index].line
    if not with_source or line is None or not spec.source_path:
        return ""
    return f"{spec.source_path}:{line}"


def v3_code_rows(spec: KernelSpec, totals: RowTotals | None, with_source: bool,
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


def pcs_code_rows(spec: KernelSpec, waves: list[WaveRecord], with_source: bool) -> list[list]:
    base = v3_code_rows(spec, None, with_source, develop=False)
    issued, stalled, reasons = _pc_samples(spec, waves)
    return [row + [issued[i], stalled[i], reasons[i]] for i, row in enumerate(base)]


def _legacy_type(category: int) -> int:
    return LEGACY_BRANCH_TYPE if category in (CAT_JUMP, CAT_NEXT) else category


def legacy_code(spec: KernelSpec, waves: list[WaveRecord], with_source: bool) -> dict:
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


def relines(waves: list[WaveRecord], shift: int) -> list[WaveRecord]:
    """Copies of the waves whose instruction lines point ``shift`` rows further down."""
    out = []
    for wave in waves:
        moved = WaveRecord(**{**wave.__dict__})
        moved.instructions = [[t, c, s, d, line + shift] for t, c, s, d, line in wave.instructions]
        moved.waitcnt = [[w + shift, [[p + shift, k] for p, k in prods]] for w, prods in wave.waitcnt]
        out.append(moved)
    return out


def wave_json(wave: WaveRecord) -> str:
    return dumps({
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


def legacy_wave_json(wave: WaveRecord) -> str:
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


def wave_index(waves: list[WaveRecord]) -> dict:
    index: dict = {}
    for wave in waves:
        slot = index.setdefault(str(wave.se), {}).setdefault(str(wave.simd), {}).setdefault(
            str(wave.slot), {})
        slot[str(wave.wv)] = [wave.filename, wave.begin, wave.end]
    return index


def occupancy_events(spec: KernelSpec, waves: list[WaveRecord]) -> dict[str, list[list[int]]]:
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


def wstates(waves: list[WaveRecord]) -> dict[int, dict]:
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


def realtime(spec: KernelSpec, waves: list[WaveRecord]) -> dict:
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


def snapshots(spec: KernelSpec) -> tuple[dict, str]:
    """snapshots.json tree for the source path and the local copy's file name."""
    parts = [p for p in spec.source_path.split("/") if p]
    local = f"source_0_{parts[-1]}"
    node: dict = {}
    tree = {"/": node}
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = local
    return tree, local


def att_stats_rows(spec: KernelSpec, code_rows: list[list], develop: bool) -> list[list]:
    rows = []
    for row in code_rows:
        source = row[3]
        counts = row[6:10]
        extra = [0, 0, 0] if develop else []
        rows.append([row[4], row[5], row[0], *counts, *extra, source])
    return rows


def legacy_wstates(waves: list[WaveRecord], bins: int = 256) -> dict[int, dict]:
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
