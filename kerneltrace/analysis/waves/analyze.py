"""Wave-level analyses over per-wave ATT files: entry point `analyze_waves` and the `waves` object.

`analyze_waves(dispatch_dir, table)` streams the wave files (kerneltrace.readers.wavefile.reader, one
batch at a time) in groups into small per-line and per-loop accumulators and assembles the
`waves` object of the `kerneltrace.hotspots/2` document (field reference: docs/waves-json.md).
Each concern lives in its own module (definitions and the "why" of each rule are there):
* stream.py       reading the files in groups, in one process or two (forked child)
* accumulate.py   WaveTotals, whole-group numpy pass (invariant sums, per-wave states)
* states.py       states, durations, spread, longest/shortest waves
* waitcnt.py      waitcnt attribution to the youngest drained producer
* loops.py        hot loops, MFMA busy fraction, prologue/loop/epilogue split
* consistency.py  invariant check (files listed/present/skipped, code.json = Σ waves)
* occupancy.py    resident waves over time from occupancy.json
* residency.py    waves resident at once per SIMD/CU from the wave lifetimes
* stragglers.py   at each barrier, the wave that arrived last and what made it late
* heap.py         the C allocator's thresholds: freed numpy temporaries reused, not re-faulted
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kerneltrace.analysis.waves.accumulate import WaveTotals
from kerneltrace.analysis.waves.consistency import consistency
from kerneltrace.analysis.waves.heap import keep_freed_memory
from kerneltrace.analysis.waves.loops import loop_summary, mfma_pass_cycles_by_row
from kerneltrace.analysis.waves.occupancy import occupancy_summary
from kerneltrace.analysis.waves.peers import PeerTotals, peer_summary
from kerneltrace.analysis.waves.residency import residency_summary
from kerneltrace.analysis.waves.states import state_summary
from kerneltrace.analysis.waves.stragglers import StragglerTotals, straggler_summary
from kerneltrace.analysis.waves.stream import accumulate
from kerneltrace.analysis.waves.waitcnt import wait_links, waitcnt_summary
from kerneltrace.analysis.waves.work_split import empty_indices, empty_part, work_split
from kerneltrace.readers.realtime import realtime_mhz
from kerneltrace.readers.wavefile.reader import wave_files
from kerneltrace.thresholds import DEFAULT_STRUCTURE, StructureThresholds

if TYPE_CHECKING:
    from kerneltrace.readers.codejson import CodeTable

def analyze_waves(dispatch_dir: Path, table: CodeTable, workers: int | None = None,
                  limits: StructureThresholds = DEFAULT_STRUCTURE) -> dict:
    """The `waves` object of the hotspot document (kerneltrace.hotspots/2) for one dispatch dir.

    `workers`: processes reading the files (1 or 2; None = automatic, see stream.py);
    `limits`: the structure thresholds in use (`untraced_factor`: stragglers.py).
    """
    import numpy as np

    keep_freed_memory()  # before the streaming: a forked worker inherits it
    dispatch_dir = Path(dispatch_dir)
    paths = wave_files(dispatch_dir)
    rows = {row.index: row for row in table.rows}
    code_rows = max([*rows, 0]) + 1

    def new_totals() -> WaveTotals:
        totals = WaveTotals.empty(code_rows)
        totals.peers = PeerTotals.empty(table, code_rows)
        totals.stragglers = StragglerTotals.empty(totals.peers.barrier)
        return totals

    mfma_rows, mfma_unknown = mfma_pass_cycles_by_row(table)
    mfma_by_line = np.zeros(code_rows, np.int64)
    for index, cycles in mfma_rows.items():
        mfma_by_line[index] = cycles
    totals = accumulate(paths, new_totals, mfma_by_line, workers)
    split = work_split(totals.per_wave, limits)
    if split and split["empty_waves"]:
        # the empty waves' own per-row cost: the plan ranks the kernel's work on the busy waves
        by_name = {path.name: path for path in paths}
        empty = [by_name[totals.per_wave[i][0]] for i in empty_indices(totals.per_wave, limits) or []
                 if totals.per_wave[i][0] in by_name]
        split.update(empty_part(empty, totals, mfma_by_line, rows))
    return {
        "files": totals.files,
        "bytes": totals.bytes,
        "waves": len(totals.per_wave),
        "layout": "/".join(sorted(totals.layouts)) or None,
        "skipped": totals.skipped,
        **state_summary(totals.per_wave),
        "waitcnt": waitcnt_summary(totals.waits, totals.stall, totals.hits, rows),
        "wait_links": wait_links(totals.waits, totals.stall),
        "loops": loop_summary(totals.loops, rows, mfma_unknown),
        "consistency": consistency(dispatch_dir, paths, totals, table),
        "occupancy": occupancy_summary(dispatch_dir, totals.traced_cu),
        "residency": residency_summary(totals.per_wave),
        "work_split": split,
        "clock_mhz": realtime_mhz(dispatch_dir),  # measured shader clock (realtime.json), or None
        "peers": peer_summary(totals.peers, rows),
        "stragglers": straggler_summary(totals.stragglers, limits.untraced_factor),
    }
