"""Write one synthetic decoded ATT dispatch dir (per variant) to disk, atomically renamed into place."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from kerneltrace import atomic
from kerneltrace.errors import InputError
from kerneltrace.synth import csvs
from kerneltrace.synth.documents import (
    PCS_HEADER,
    TOOL_VERSION,
    V3_DEVELOP_HEADER,
    V3_HEADER,
    att_stats_rows,
    dumps,
    legacy_code,
    legacy_wave_json,
    legacy_wstates,
    occupancy_events,
    pcs_code_rows,
    realtime,
    relines,
    snapshots,
    v3_code_rows,
    wave_index,
    wave_json,
    wstates,
)
from kerneltrace.synth.simulate import LABEL_ROWS, RowTotals, WaveRecord, iter_waves, simulate
from kerneltrace.synth.spec import KernelSpec

VARIANTS = ("v3", "v3-develop", "pcsampling", "legacy", "empty", "no-source")


def dispatch_dir_name(agent_handle: int, dispatch_id: int) -> str:
    return f"ui_output_agent_{agent_handle}_dispatch_{dispatch_id}"


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
            tree, local = snapshots(spec)
            put("snapshots.json", dumps(tree))
            put(local, spec.source_text)
        atomic.replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if with_stats_csv:
        atomic.write_text(root / f"stats_{name}.csv",
                          csvs.att_stats_csv(stats_rows, develop=develop))
    return target


def _write_empty(put, spec: KernelSpec) -> list[list]:
    put("code.json", dumps({"code": None, "header": V3_HEADER, "version": TOOL_VERSION}))
    put("filenames.json", dumps({"counter_names": [], "gfxip": 9, "gfxv": "vega",
                                  "global_begin_time": 0, "version": TOOL_VERSION,
                                  "wave_filenames": {}}))
    put("occupancy.json", dumps({"dispatches": {"0": "0 / 0x0", "1": spec.name},
                                  "version": TOOL_VERSION}))
    return []


def _write_v3(put, spec: KernelSpec, waves: Iterable[WaveRecord], with_waves: bool,
              with_source: bool, with_realtime: bool, develop: bool) -> list[list]:
    totals = RowTotals.zeros(len(spec.instructions) + LABEL_ROWS)
    kept: list[WaveRecord] = []  # waves without their instruction lists (memory stays small)
    for wave in waves:
        totals.add_wave(wave)
        if with_waves:
            put(wave.filename, wave_json(wave))
        kept.append(replace(wave, instructions=[], waitcnt=[]))
    # without wave files (e.g. not committed) code.json and filenames.json still describe
    # every wave, as in real captures shipped without them
    code_rows = v3_code_rows(spec, totals, with_source, develop)
    put("code.json", dumps({"code": code_rows,
                             "header": V3_DEVELOP_HEADER if develop else V3_HEADER,
                             "version": TOOL_VERSION}))
    put("filenames.json", dumps({"counter_names": [], "gfxip": 9, "gfxv": "vega",
                                  "global_begin_time": 0, "version": TOOL_VERSION,
                                  "wave_filenames": wave_index(kept)}))
    occupancy: dict = dict(occupancy_events(spec, kept))
    occupancy["dispatches"] = {"0": "0 / 0x0", "1": spec.name}
    occupancy["version"] = TOOL_VERSION
    put("occupancy.json", dumps(occupancy))
    for state, doc in wstates(kept).items():
        put(f"wstates{state}.json", dumps(doc))
    if with_realtime:
        put("realtime.json", dumps(realtime(spec, kept)))
    return att_stats_rows(spec, code_rows, develop)


def _write_pcsampling(put, spec: KernelSpec, waves: list[WaveRecord], with_source: bool) -> list[list]:
    code_rows = pcs_code_rows(spec, waves, with_source)
    put("code.json", dumps({"code": code_rows, "header": PCS_HEADER, "version": TOOL_VERSION}))
    put("filenames.json", dumps({
        "counter_names": [], "gfxip": 9, "gfxv": "vega", "global_begin_time": 0,
        "is_pcs_stochastic": True, "pc_sampling": True, "thread_trace": False,
        "version": TOOL_VERSION, "wave_filenames": None}))
    return att_stats_rows(spec, code_rows, develop=False)


def _write_legacy(put, spec: KernelSpec, waves: list[WaveRecord], with_waves: bool,
                  with_source: bool) -> list[list]:
    legacy_waves = relines(waves, 1)  # legacy lines are code-array positions (2 comment rows)
    put("code.json", json.dumps(legacy_code(spec, legacy_waves, with_source)))
    if with_waves:
        for wave in legacy_waves:
            put(wave.filename, legacy_wave_json(wave))
    ses = range(spec.waves.shader_engines)
    put("filenames.json", json.dumps({
        "wave_filenames": wave_index(legacy_waves) if with_waves else {},
        "se_filenames": [f"se{se}_info.json" for se in ses],
        "global_begin_time": 0, "gfxv": "vega"}))
    for se in ses:
        put(f"se{se}_info.json", json.dumps({"name": "SE", "websocket_port": 18000,
                                             "generation_time": "SYNTHETIC"}))
        put(f"se{se}_perfcounter.json", json.dumps({"data": []}))
    occupancy: dict = {}
    for se, events in occupancy_events(spec, waves).items():
        # packed event word; the real bit layout is undocumented, this one is synthetic
        occupancy[se] = [(t << 16) | (cu << 8) | (simd << 4) | (slot << 1) | start
                         for t, cu, simd, slot, start, _k in events]
    occupancy["dispatches"] = {"0": "Addr #0x0", "1": spec.name}
    occupancy["names"] = [f"./att/synthetic_se{se}.att" for se in ses]
    put("occupancy.json", json.dumps(occupancy))
    for state, doc in legacy_wstates(waves).items():
        put(f"wstates{state}.json", json.dumps(doc))
    put("graph_options.json", json.dumps({"occupancy.png": [f"SE{se}" for se in ses],
                                          "dispatches.png": {"0": "Addr #0x0", "1": spec.name}}))
    put("live.json", json.dumps({"live": 0}))
    return []


