"""Export one dispatch dir's waves as a Perfetto trace: inputs checked, rows chosen, waves streamed.

`export_timeline(dispatch_dir, out)` reads code.json once, resolves the arch and the clock,
chooses which instruction rows become slices (under a cap, stated in the metadata), then streams
the wave files group by group (kerneltrace/analysis/waves/stream.py's group sizes) through
waves.group_events and counters.add_group into the writer, so memory holds one group at a time.
All of that but the writer is `_produce`, a generator of Batches, which worker.produced runs in a
forked child when a core is free (the caller encodes one group while the next is built).
The output is written to a temporary sibling and renamed only when complete (atomic.streaming);
over `max_bytes` the export stops with an InputError and leaves nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltrace.errors import InputError

if TYPE_CHECKING:
    from kerneltrace.readers.codejson import CodeTable
    from kerneltrace.render.timeline.waves import Rows

SCHEMA = "kerneltrace.timeline/1"
FORMATS = ("perfetto", "json")
DEFAULT_MAX_INSTRUCTION_SLICES = 150_000
DEFAULT_TOP_INSTRUCTIONS = 16
DEFAULT_MAX_MB = 200.0


@dataclass
class RowChoice:
    """Which code rows are drawn as instruction slices, and what the cap left out."""

    shown: list[int]
    dropped: list[int]
    shown_executions: int
    dropped_executions: int
    cap: int
    top: int


@dataclass
class TimelineResult:
    """What one export wrote (also printed by the CLI and written into the trace's metadata)."""

    path: str
    format: str
    bytes: int
    clock_mhz: float | None
    clock_source: str
    arch: str | None
    rows: RowChoice
    hot_loop: tuple[int, int] | None
    counts: dict[str, Any] = field(default_factory=dict)
    loop_dropped: bool = False  # the hot loop's iterations would take over half the cap

    def summary_lines(self) -> list[str]:
        c = self.counts
        clock = (f"{self.clock_mhz:g} MHz from {self.clock_source}" if self.clock_mhz
                 else self.clock_source)
        lines = [
            f"timeline: {self.path} ({self.format}, {self.bytes / 1e6:.1f} MB): {c['waves']} waves, "
            f"{c['state_slices']} state slices, {c['instruction_slices']} instruction slices, "
            f"{c['flows']} load→wait flows, {c['barrier_arrivals']} barrier arrivals, "
            f"{c['loop_iterations']} loop iterations",
            f"clock: {clock}",
        ]
        if self.rows.dropped:
            lines.append(
                f"instruction slices capped at {self.rows.cap}: {len(self.rows.shown)} rows shown, "
                f"{len(self.rows.dropped)} rows ({self.rows.dropped_executions} executions) "
                "left out; --max-instruction-slices raises the cap")
        if self.loop_dropped:
            lines.append("hot-loop iterations left out: they would take over half of "
                         f"--max-instruction-slices ({self.rows.cap})")
        if c.get("flows_not_shown"):
            lines.append(f"{c['flows_not_shown']} attributed waits have no arrow (their load or "
                         "wait row is not shown)")
        if c.get("skipped_waves"):
            lines.append(f"{len(c['skipped_waves'])} wave files skipped (unreadable or implausible)")
        return lines


def check_dispatch_dir(dispatch_dir: Path) -> list[Path]:
    """The wave files of a decoded dispatch dir; InputError when it is not one or has none."""
    from kerneltrace.readers.wavefile.reader import WAVE_FILE_GLOB, wave_files

    given = str(dispatch_dir)
    if not dispatch_dir.is_dir():
        raise InputError("dispatch directory not found" if not dispatch_dir.exists()
                         else "not a directory", given,
                         "pass a ui_output_agent_*_dispatch_* directory")
    if not (dispatch_dir / "code.json").exists():
        raise InputError("no code.json in this directory (not a decoded ATT dispatch dir)", given,
                         "pass a ui_output_agent_*_dispatch_* directory written by rocprofv3 --att")
    paths = wave_files(dispatch_dir)
    if not paths:
        raise InputError(f"no wave files ({WAVE_FILE_GLOB}) in this dispatch dir: a timeline needs "
                         "the per-wave files", given,
                         "use a capture that kept its wave files (the decoder writes them for the "
                         "waves of the target CU), or skip the timeline for this dispatch")
    return paths


def choose_rows(table: CodeTable, cap: int, top: int) -> RowChoice:
    """Rows drawn as instruction slices, by priority, while their executions (code.json hits)
    fit under `cap`: the `top` costliest (latency + idle), then the waits that stalled (by stall),
    then the memory instructions the waits drain (by cost); the rest is dropped and counted."""
    from kerneltrace.isa import classify as isa

    waits = {isa.VMEM_WAIT, isa.LDS_SMEM_WAIT, isa.EXP_WAIT}
    memory = {isa.VMEM_LOAD, isa.VMEM_STORE, isa.LDS, isa.SMEM}
    executed = [row for row in table.rows if row.hits > 0]

    def cost(row) -> int:
        return row.latency + (row.idle or 0)

    by_cost = sorted(executed, key=lambda row: (-cost(row), row.index))
    kinds = {row.index: isa.classify(row.asm) for row in executed}
    ordered = by_cost[:top]
    ordered += sorted((row for row in executed if kinds[row.index] in waits and (row.stall or 0) > 0),
                      key=lambda row: (-(row.stall or 0), row.index))
    ordered += [row for row in by_cost if kinds[row.index] in memory]
    seen: set[int] = set()
    shown, dropped, used, left = [], [], 0, 0
    for row in ordered:
        if row.index in seen:
            continue
        seen.add(row.index)
        if used + row.hits <= cap:
            shown.append(row.index)
            used += row.hits
        else:
            dropped.append(row.index)
            left += row.hits
    return RowChoice(sorted(shown), sorted(dropped), used, left, cap, top)


def hot_loop(table: CodeTable) -> tuple[int, int] | None:
    """[first, last] rows of the static loop with the highest cost (latency + idle), if any."""
    from kerneltrace.analysis.loops import find_loops, rows_from_code_rows

    cost = {row.index: row.latency + (row.idle or 0) for row in table.rows}
    best = None
    for loop in find_loops(rows_from_code_rows(table.rows)):
        if not loop.iterates:
            continue
        total = sum(cost.get(i, 0) for i in range(loop.first_index, loop.last_index + 1))
        rank = (total, -loop.size)
        if total > 0 and (best is None or rank > best[0]):
            best = (rank, (loop.first_index, loop.last_index))
    return best[1] if best else None


def _rows(table: CodeTable, names, choice: RowChoice, loop) -> Rows:
    import numpy as np

    from kerneltrace.isa import classify as isa
    from kerneltrace.render.timeline.waves import Rows

    size = max([row.index for row in table.rows] + [0]) + 1
    asm = np.zeros(size, np.int64)
    source = np.zeros(size, np.int64)
    opcode = np.full(size, names.events.id("instruction"), np.int64)
    barrier = np.zeros(size, bool)
    for row in table.rows:
        asm[row.index] = names.values.id(row.asm)
        source[row.index] = names.values.id(row.source or "")
        opcode[row.index] = names.events.id(isa.opcode(row.asm) or "instruction")
        barrier[row.index] = isa.classify(row.asm) == isa.BARRIER
    shown = np.zeros(size, bool)
    shown[choice.shown] = True
    return Rows(asm, source, opcode, shown, barrier, loop)


def _metadata_event(ctx, result: TimelineResult, dispatch_dir: Path, kernel: str | None):
    import numpy as np

    from kerneltrace.render.timeline.events import INSTANT, Arg, Events

    values = ctx.names.values
    fields: dict[str, Any] = {
        "schema": SCHEMA, "dispatch_dir": dispatch_dir.name, "kernel": kernel or "",
        "arch": result.arch or "unknown", "clock_source": result.clock_source,
        "clock_mhz": result.clock_mhz if result.clock_mhz else None,
        "time_unit": "ns" if result.clock_mhz else "cycles written as ns",
        "ns_per_cycle": 1000.0 / result.clock_mhz if result.clock_mhz else 1.0,
        "instruction_slice_cap": result.rows.cap, "top_instructions": result.rows.top,
        "instruction_rows_shown": len(result.rows.shown),
        "instruction_rows_dropped": len(result.rows.dropped),
        "instruction_executions_dropped": result.rows.dropped_executions,
        "dropped_rows": ",".join(map(str, result.rows.dropped[:200])),
        "hot_loop": f"{result.hot_loop[0]}-{result.hot_loop[1]}" if result.hot_loop else "",
        "hot_loop_dropped": int(result.loop_dropped),
        **{k: v for k, v in result.counts.items() if k != "skipped_waves"},
        "skipped_waves": len(result.counts.get("skipped_waves", [])),
    }
    args = []
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, str):
            args.append(Arg(name, "str", np.array([values.id(value)], np.int64)))
        elif isinstance(value, float):
            args.append(Arg(name, "double", np.array([value], np.float64)))
        else:
            args.append(Arg(name, "int", np.array([int(value)], np.int64)))
    event = Events(ts=np.zeros(1, np.int64), track=np.array([ctx.tracks.metadata()], np.int64),
                   type=np.array([INSTANT], np.int64),
                   name=np.array([ctx.names.events.id("trace metadata")], np.int64), args=args)
    return event, fields


@dataclass
class Batch:
    """One write of the producer: tracks first seen, strings first interned (per Names table,
    in id order) and the events that use them."""

    tracks: list
    strings: tuple[list[str], list[str], list[str]]
    events: Any
    waves: int  # waves written so far (for the size-cap message)

    def intern(self, names) -> None:
        """Give `names` (the writer's) the strings in the producer's order: the same ids."""
        for table, strings in zip((names.events, names.args, names.values), self.strings, strict=True):
            for text in strings:
                table.id(text)


def export_timeline(dispatch_dir: Path | str, out: Path | str, *, fmt: str = "perfetto",
                    arch: str | None = None, max_instruction_slices: int = DEFAULT_MAX_INSTRUCTION_SLICES,
                    top_instructions: int = DEFAULT_TOP_INSTRUCTIONS,
                    max_mb: float = DEFAULT_MAX_MB, fork: bool | None = None) -> TimelineResult:
    """Write the timeline of `dispatch_dir` to `out`; raises InputError for bad input or when the
    trace would exceed `max_mb` (nothing is written then). The events are built in a forked
    worker while this process writes them (worker.py; `fork` False: all in this process)."""
    from functools import partial

    import numpy  # noqa: F401  both processes need it: imported once, before the fork

    from kerneltrace import atomic
    from kerneltrace.render.timeline.events import Names
    from kerneltrace.render.timeline.worker import produced

    if fmt not in FORMATS:
        raise InputError(f"unknown timeline format {fmt!r}", "--format", f"use one of {', '.join(FORMATS)}")
    dispatch_dir = Path(dispatch_dir)
    limit = int(max_mb * 1e6)
    produce = partial(_produce, dispatch_dir, out, fmt, arch, max_instruction_slices, top_instructions)
    with produced(produce, fork, str(dispatch_dir)) as items:
        # the inputs are checked and code.json read before the output is opened
        result, wave_count = next(items)
        names = Names()
        with atomic.streaming(out) as handle:
            writer = _writer(fmt, handle, names)
            for batch in items:
                batch.intern(names)
                writer.tracks(batch.tracks)
                writer.events(batch.events)
                if writer.size > limit:
                    raise InputError(
                        f"the timeline is larger than the size cap of {max_mb:g} MB after "
                        f"{batch.waves} of {wave_count} waves (nothing written)", str(out),
                        "raise --max-mb, or lower --max-instruction-slices / --top-instructions")
                batch = None  # not kept while the next one is built or received
            result.counts, fields = items.result
            writer.finish(fields)
            result.bytes = writer.written
    return result


def _produce(dispatch_dir: Path, out: Path | str, fmt: str, arch: str | None,
             max_instruction_slices: int, top_instructions: int):
    """The export without its writer, as a generator: first (the result so far, wave files),
    then one Batch per write; returns (counts, metadata fields). Memory holds one group."""
    from kerneltrace import atomic
    from kerneltrace.analysis.waves.accumulate import implausible_waves, plausible
    from kerneltrace.analysis.waves.group import Group
    from kerneltrace.analysis.waves.peers import row_pipes
    from kerneltrace.analysis.waves.stream import GROUP_INSTRUCTIONS, GROUP_WAVES
    from kerneltrace.readers.codejson import read_code_json
    from kerneltrace.readers.wavefile.reader import iter_wave_files
    from kerneltrace.render.timeline import counters
    from kerneltrace.render.timeline.clock import resolve_clock
    from kerneltrace.render.timeline.events import Names
    from kerneltrace.render.timeline.tracks import TrackRegistry
    from kerneltrace.render.timeline.waves import Context, group_events

    paths = check_dispatch_dir(dispatch_dir)
    atomic.refuse_input_overwrite([out], [dispatch_dir])
    table = read_code_json(dispatch_dir / "code.json")
    arch_name, agent_mhz, kernel = _arch_and_agents(dispatch_dir, table, arch)
    clock = resolve_clock(dispatch_dir, agent_mhz, arch_name)
    names = Names()
    loop = hot_loop(table)
    # loop iterations come out of the same cap, first, when they take at most half of it
    header_hits = next((row.hits for row in table.rows if loop and row.index == loop[0]), 0)
    loop_dropped = bool(loop) and header_hits > max_instruction_slices // 2
    if loop_dropped:
        loop, header_hits = None, 0
    choice = choose_rows(table, max_instruction_slices - header_hits, top_instructions)
    choice.cap = max_instruction_slices
    rows = _rows(table, names, choice, loop)
    ctx = Context(clock, names, TrackRegistry(), rows)
    code_rows = len(rows.asm)
    pipe, _ = row_pipes(table, code_rows)
    counter_totals = counters.new_totals(_span(dispatch_dir), pipe)
    result = TimelineResult(str(out), fmt, 0, clock.mhz, clock.source, arch_name, choice, loop,
                            loop_dropped=loop_dropped)
    yield result, len(paths)

    def batch(events) -> Batch:
        strings = tuple([text for _, text in strings_table.pending()]
                        for strings_table in (names.events, names.args, names.values))
        return Batch(ctx.tracks.take_new(), strings, events, ctx.counts.waves)

    def events_of(group_waves):
        if not group_waves:
            return None
        group = Group.of(group_waves)
        if not plausible(group, code_rows):
            bad = implausible_waves(group_waves, code_rows)
            for position, why in sorted(bad.items()):
                ctx.counts.skipped_waves.append({"file": group_waves[position].path.name,
                                                 "error": f"implausible values: {why}"})
            group_waves = [w for i, w in enumerate(group_waves) if i not in bad]
            if not group_waves:
                return None
            group = Group.of(group_waves)
        counters.add_group(counter_totals, group)
        return group_events(group, ctx)

    group, instructions = [], 0
    for item in iter_wave_files(paths):
        if isinstance(item, InputError):
            ctx.counts.skipped_waves.append({"file": Path(item.where).name, "error": item.what})
            continue
        group.append(item)
        instructions += len(item.instructions)
        if len(group) >= GROUP_WAVES or instructions >= GROUP_INSTRUCTIONS:
            events = events_of(group)
            group, instructions = [], 0
            if events is not None:
                yield batch(events)
                events = None  # not kept while the next group is built
    events = events_of(group)
    del group
    if events is not None:
        yield batch(events)
    if not ctx.counts.waves:
        raise InputError("no readable wave file in this dispatch dir (nothing written)",
                         str(dispatch_dir), "re-run the ATT decode")
    yield batch(counters.counter_events(counter_totals, clock, ctx.tracks))
    result.counts = asdict(ctx.counts)
    metadata, fields = _metadata_event(ctx, result, dispatch_dir, kernel)
    yield batch(metadata)
    return result.counts, fields


def _writer(fmt: str, handle, names):
    if fmt == "json":
        from kerneltrace.render.timeline.chrome_json import JsonWriter

        return JsonWriter(handle, names)
    try:
        from kerneltrace.render.timeline.proto import ProtoWriter

        return ProtoWriter(handle, names)
    except ImportError as err:
        raise InputError(f"the perfetto Python package is not installed ({err})", "--format perfetto",
                         "pip install perfetto (it is a project dependency), or use --format json") from None


def _span(dispatch_dir: Path) -> int | None:
    """Cycles from the first wave begin to the last wave end, from filenames.json (None: unknown)."""
    from kerneltrace.readers.filenames import read_filenames

    try:
        info = read_filenames(dispatch_dir / "filenames.json")
    except (InputError, OSError):
        return None
    begins = [e.begin for e in info.wave_files if e.begin is not None]
    ends = [e.end for e in info.wave_files if e.end is not None]
    return max(ends) - min(begins) if begins and ends else None


def _arch_and_agents(dispatch_dir: Path, table: CodeTable, explicit: str | None):
    """(arch name or None, GPU agents' engine clocks, kernel name) from the CSV metadata + ISA."""
    from kerneltrace.arch.detect import resolve_arch
    from kerneltrace.model.metadata import find_metadata
    from kerneltrace.model.naming import parse_dispatch_name
    from kerneltrace.readers.csvs import gpu_agents

    kernels = [k for label in table.kernels for k in (label.symbol, label.name) if k]
    name = parse_dispatch_name(dispatch_dir)
    metadata = find_metadata(dispatch_dir, name.id, kernels)
    agents = gpu_agents(metadata.agents)
    names, source = [a.name for a in agents], "agent_info"
    if explicit is None and not names:
        from kerneltrace.model.assembly import assembly_target

        # as the hotspot document resolves it: a --save-temps build's device assembly
        found = assembly_target(dispatch_dir, kernels)
        names, source = ([found[0]], "assembly") if found else (names, source)
    resolution = resolve_arch(explicit, names, list(dict.fromkeys(row.asm for row in table.rows)),
                              metadata_source=source)
    kernel = table.kernels[0].name if table.kernels else None
    return resolution.name, [a.max_engine_clock_mhz for a in agents], kernel
