"""Small instruction predicates shared by the rule modules (on the hotspot document's `type`)."""

from __future__ import annotations

import re

from kerneltrace.analysis.hotspots import stall_rate
from kerneltrace.isa.classify import LDS, MFMA, VMEM_LOAD, opcode
from kerneltrace.plan.verdict import total_stall

_SMALL_LOAD = re.compile(
    r"^(?:(?:buffer|global|flat)_load_(?:dword|ubyte|sbyte|ushort|sshort|short|b32|u8|i8|u16|i16)"
    r"|s_(?:buffer_)?load_(?:dword|b32))$"
)


def opcode_of(ins: dict) -> str:
    return opcode(ins.get("asm", ""))


def is_mfma(ins: dict) -> bool:
    return ins.get("type") == MFMA


def is_vmem_load(ins: dict) -> bool:
    return ins.get("type") == VMEM_LOAD


def is_lds_read(ins: dict) -> bool:
    return ins.get("type") == LDS and opcode_of(ins).startswith(("ds_read", "ds_load"))


def is_small_load(ins: dict) -> bool:
    """Single-dword (or narrower) loads: scales, metadata, indices."""
    return bool(_SMALL_LOAD.match(opcode_of(ins)))


def stalled(ins: dict) -> bool:
    return (ins.get("stall_cycles") or 0) > 0


def instructions_stall_rate(instructions: list[dict]) -> float:
    latency = sum(ins.get("latency_cycles") or 0 for ins in instructions)
    return stall_rate(total_stall(instructions), latency) or 0.0
