"""MFMA pass latency per variant and producer→consumer dependency spacing (the single table).

Values and their sources: docs/isa-and-occupancy.md §4 (the FlyDSL kernel-trace skill's tables,
the CDNA3/CDNA4 ISA guides). `cycles` is the issue-to-issue pass latency in the skill's units; `passes` = cycles / 4
(one pass is four cycles). Variants the sources do not give return None — never a guess —
except the CDNA4 double-K f16/bf16 shapes, marked `confirmed=False` (see docs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerneltrace.isa.classify import base_opcode


@dataclass(frozen=True)
class MfmaInfo:
    """Latency facts of one MFMA instruction."""

    shape: str  # "MxNxK"
    cycles: int
    passes: int
    confirmed: bool  # False: inferred, not stated by the sources
    note: str = ""

    def to_dict(self) -> dict:
        return {"shape": self.shape, "cycles": self.cycles, "passes": self.passes,
                "confirmed": self.confirmed, "note": self.note}


_SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)")
# Block-scaled / f8f6f4 operand formats (cbsz for A, blgp for B): 0 FP8 (E4M3), 1 BF8 (E5M2),
# 2 FP6, 3 BF6, 4 FP4. Absent modifier = 0 = FP8.
_FORMAT_MODIFIER = re.compile(r"\b(cbsz|blgp):\s*(\d+)")
_FP8_FORMATS = (0, 1)

# (opcode regex on the base opcode, cycles, confirmed, note). First match wins.
_TABLE: tuple[tuple[re.Pattern[str], int, bool, str], ...] = tuple(
    (re.compile(pattern), cycles, confirmed, note)
    for pattern, cycles, confirmed, note in (
        (r"^v_mfma_f32_16x16x16_?(f16|bf16|bf16_1k)$", 16, True, ""),
        (r"^v_mfma_f32_32x32x8_?(f16|bf16|bf16_1k)$", 32, True, ""),
        (r"^v_mfma_f32_16x16x32_(f16|bf16)$", 16, False,
         "CDNA4 double-K shape; assumed equal to 16x16x16 (same pass count, twice the K)"),
        (r"^v_mfma_f32_32x32x16_(f16|bf16)$", 32, False,
         "CDNA4 double-K shape; assumed equal to 32x32x8 (same pass count, twice the K)"),
        (r"^v_mfma_f32_16x16x32_(fp8|bf8)_(fp8|bf8)$", 16, True, "CDNA3 and CDNA4"),
        (r"^v_mfma_f32_32x32x16_(fp8|bf8)_(fp8|bf8)$", 32, True, "CDNA3 and CDNA4"),
        (r"^v_mfma_f32_16x16x4_?f32$", 32, True, ""),
        (r"^v_mfma_f32_32x32x2_?f32$", 64, True, ""),
        (r"^v_mfma_f64_16x16x4_?f64$", 64, True, ""),
    )
)

# f8f6f4 shapes (CDNA4): (fast cycles, FP8 cycles).
_F8F6F4: dict[str, tuple[int, int]] = {"16x16x128": (16, 32), "32x32x64": (32, 64)}


def _formats(asm: str) -> dict[str, int]:
    found = {name: int(value) for name, value in _FORMAT_MODIFIER.findall(asm.lower())}
    return {"cbsz": found.get("cbsz", 0), "blgp": found.get("blgp", 0)}


def mfma_info(asm: str) -> MfmaInfo | None:
    """Pass latency of an MFMA instruction (opcode or full text with cbsz/blgp modifiers).

    None for non-MFMA instructions and for variants without a sourced latency.
    """
    op = base_opcode(asm)
    if not op.startswith("v_mfma"):
        return None
    shape_match = _SHAPE.search(op)
    if shape_match is None:
        return None
    shape = shape_match.group(0)
    if op.endswith("_f8f6f4") and shape in _F8F6F4:
        fast, fp8 = _F8F6F4[shape]
        formats = _formats(asm)
        uses_fp8 = formats["cbsz"] in _FP8_FORMATS or formats["blgp"] in _FP8_FORMATS
        cycles = fp8 if uses_fp8 else fast
        note = ("CDNA4 only; A or B is FP8/BF8 (cbsz/blgp 0 or 1)" if uses_fp8
                else "CDNA4 only; FP6/FP4 operands")
        if op.startswith("v_mfma_scale"):
            note += "; block-exponent scaled"
        return MfmaInfo(shape, cycles, cycles // 4, True, note)
    for pattern, cycles, confirmed, note in _TABLE:
        if pattern.match(op):
            return MfmaInfo(shape, cycles, cycles // 4, confirmed, note)
    return None


@dataclass(frozen=True)
class DependencyRule:
    """Minimum independent instructions (or s_nop wait states) between producer and consumer."""

    producer: str
    consumer: str
    required: str  # a number, a range, or "by pass length" (see xdl_read_spacing)
    why: str


DEPENDENCY_RULES: tuple[DependencyRule, ...] = (
    DependencyRule("XDL (MFMA) write", "same MFMA reads it as SrcC (identical vDst)", "0-2",
                   "a forwarding path exists; back-to-back accumulation is fine"),
    DependencyRule("XDL write", "VALU / VMEM / LDS / FLAT reads the result (RAW)",
                   "by pass length", "no forwarding; the result must reach the VGPR file"),
    DependencyRule("XDL write", "another MFMA reads it as SrcA/SrcB", "by pass length",
                   "no forwarding on those operands"),
    DependencyRule("non-DLops VALU write", "MFMA read", "2", "no short forwarding path"),
    DependencyRule("VALU writes an SGPR", "VMEM reads that SGPR", "5",
                   "not checked by hardware: software must insert the waits"),
    DependencyRule("v_cmpx* writes EXEC", "v_mfma*", "4", "no EXEC forwarding into MFMA"),
)

# Pass length (cycles) → spacing for XDL-result reads (§4.3).
_XDL_READ_SPACING: dict[int, int] = {8: 5, 16: 8, 32: 12, 64: 20}


def xdl_read_spacing(cycles: int) -> int | None:
    """Independent instructions needed before an MFMA result is read by VALU/VMEM/LDS or as
    SrcA/SrcB of another MFMA, for an MFMA of `cycles` pass latency (None if not tabulated)."""
    return _XDL_READ_SPACING.get(cycles)
