"""Builders of small synthetic hotspot documents for the plan tests (no real capture needed)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Ins:
    asm: str
    type: str
    source: str = "k.py:10"
    stall: int = 0
    latency: int = 0
    hits: int = 1


def hotspot_doc(
    program: list[Ins],
    *,
    kernel: str = "gemm_kernel",
    entry: str | None = None,
    occupancy: dict | None = None,
    mapped_fraction: float = 1.0,
    waves: dict | None = None,
) -> dict:
    """A kerneltrace.hotspots/1 dict; instruction index = position; `entry` marks the entry line."""
    instructions = []
    lines: dict[str, dict] = {}
    for index, ins in enumerate(program):
        latency = max(ins.latency, ins.stall)
        instructions.append(
            {
                "index": index,
                "pc": 4 * index,
                "asm": ins.asm,
                "type": ins.type,
                "source": ins.source,
                "hits": ins.hits,
                "latency_cycles": latency,
                "stall_cycles": ins.stall,
                "idle_cycles": 0,
            }
        )
        line = lines.setdefault(
            ins.source,
            {
                "location": ins.source,
                "stall_cycles": 0,
                "latency_cycles": 0,
                "idle_cycles": 0,
                "hits": 0,
                "instructions": [],
                "by_type": {},
            },
        )
        line["stall_cycles"] += ins.stall
        line["latency_cycles"] += latency
        line["hits"] += ins.hits
        line["instructions"].append(index)
        line["by_type"][ins.type] = line["by_type"].get(ins.type, 0) + ins.stall
    total_stall = sum(ins.stall for ins in program)
    total_latency = sum(i["latency_cycles"] for i in instructions)
    source_lines = []
    for line in lines.values():
        by_type = line.pop("by_type")
        line["share"] = line["stall_cycles"] / total_stall if total_stall else 0.0
        line["stall_rate"] = (
            line["stall_cycles"] / line["latency_cycles"] if line["latency_cycles"] else None
        )
        line["dominant_type"] = max(by_type, key=by_type.get)
        line["artifact"] = (
            "kernel-entry"
            if line["location"] == entry
            else ("unmapped" if not line["location"] else None)
        )
        source_lines.append(line)
    source_lines.sort(key=lambda line: -line["stall_cycles"])
    by_type: dict[str, int] = {}
    for ins in program:
        by_type[ins.type] = by_type.get(ins.type, 0) + ins.stall
    doc = {
        "schema": "kerneltrace.hotspots/2" if waves else "kerneltrace.hotspots/1",
        "tool": {"name": "kernel-trace-analysis", "version": "test"},
        "dispatch_dir": f"/captures/{kernel}/ui_output_agent_1_dispatch_7",
        "dispatch": {"agent": 1, "id": 7, "label": ""},
        "kernel": kernel,
        "format": "v3",
        "arch": {"name": "gfx942", "source": "test", "certain": True, "candidates": ["gfx942"]},
        "totals": {
            "instructions": len(program),
            "executed_instructions": len(program),
            "stall_cycles": total_stall,
            "latency_cycles": total_latency,
            "idle_cycles": 0,
            "hits": sum(ins.hits for ins in program),
        },
        "stall_by_type": sorted(
            (
                {"type": t, "stall_cycles": s, "share": s / total_stall if total_stall else 0.0}
                for t, s in by_type.items()
            ),
            key=lambda row: -row["stall_cycles"],
        ),
        "source_lines": source_lines,
        "instructions": sorted(instructions, key=lambda i: -i["stall_cycles"]),
        "occupancy": occupancy
        or {
            "waves_per_simd": 8,
            "limited_by": None,
            "limits": {"vgpr": 8, "sgpr": 8, "lds": 8, "workgroup": 8, "hardware": 8},
            "registers": {},
            "next_level": {},
            "sources": {},
        },
        "metadata": None,
        "source_mapping": {"mapped_fraction": mapped_fraction, "hint": None},
        "warnings": [],
    }
    if waves:
        doc["waves"] = waves
    return doc


MFMA = "v_mfma_f32_16x16x16_bf16 v[0:3], v[8:9], v[10:11], v[0:3]"


def mfma_loop_with_load() -> list[Ins]:
    """Pattern 1: a global load between MFMAs, its wait right after (line k.py:20)."""
    return [
        Ins("s_load_dwordx2 s[0:1], s[4:5], 0x0", "SMEM", "k.py:5", 10, 40),
        Ins(MFMA, "MFMA", "k.py:30", 0, 16),
        Ins(MFMA, "MFMA", "k.py:30", 0, 16),
        Ins("global_load_dwordx4 v[20:23], v[2:3], off", "VMEM-load", "k.py:20", 300, 320),
        Ins(MFMA, "MFMA", "k.py:30", 0, 16),
        Ins("s_waitcnt vmcnt(0)", "VMEM-wait", "k.py:20", 900, 910),
        Ins(
            "v_mfma_f32_16x16x16_bf16 v[4:7], v[20:21], v[22:23], v[4:7]", "MFMA", "k.py:30", 10, 26
        ),
    ]
