"""Instruction encoding sizes in bytes (the step between consecutive Vaddr values) from ISA text.

Captures without a Vaddr column (rocprofv2 legacy code.json) need instruction addresses to resolve
branch targets; summing these sizes rebuilds them. The sizes follow the encodings of the CDNA3 /
CDNA4 ISA guides (AMD, "AMD Instinct MI300 ISA Reference Guide", ch. 13 "Microcode formats"):
SOP1/SOP2/SOPC/SOPP/SOPK and VOP1/VOP2/VOPC are 4 bytes (+4 for a 32-bit literal, never on SOPK
or SOPP), VOP3/VOP3P/MFMA, SMEM, MUBUF/MTBUF, FLAT/GLOBAL/SCRATCH and DS are 8, and the scaled
MFMAs of CDNA4 (`v_mfma_scale_*`, VOP3PX2) are 16. On the v3 captures in ../shared (22,889 steps)
these sizes reproduce every Vaddr step.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kerneltrace.isa.classify import opcode

_HEX = re.compile(r"(?<![\w.])-?0x([0-9a-fA-F]+)\b")

_EIGHT_BYTE_PREFIXES = ("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_dcache",
                        "s_scratch_", "s_atc_", "s_atomic", "s_buffer_atomic", "s_memtime",
                        "s_memrealtime", "buffer_", "tbuffer_", "global_", "flat_", "scratch_",
                        "ds_", "image_", "exp")
# VOP1 opcodes printed without an encoding suffix (there is no VOP3 form to tell apart)
_VOP1_BARE = frozenset({"v_readfirstlane_b32", "v_nop", "v_clrexcp", "v_permlane16_swap_b32",
                        "v_permlane32_swap_b32"})


def has_literal(asm: str) -> bool:
    """A 32-bit literal operand: a hex constant outside the inline range −16…64."""
    for token in _HEX.findall(asm.split(None, 1)[1] if len(asm.split(None, 1)) > 1 else ""):
        value = int(token, 16)
        if not (0 <= value <= 64 or value >= 0xFFFFFFF0):
            return True
    return False


@lru_cache(maxsize=16384)  # control flow and address reuse both rebuild every row's address
def encoded_size(asm: str) -> int:
    """Encoding size in bytes of one instruction line."""
    op = opcode(asm)
    if op.startswith("v_mfma_scale_"):
        return 16
    if op.startswith(_EIGHT_BYTE_PREFIXES):
        return 8
    literal = has_literal(asm)
    if op.startswith("s_"):
        sopk = op.startswith(("s_movk", "s_cmovk", "s_cmpk", "s_addk", "s_mulk", "s_getreg",
                              "s_setreg", "s_call"))
        sopp = op.startswith(("s_waitcnt", "s_nop", "s_branch", "s_cbranch", "s_barrier",
                              "s_endpgm", "s_sendmsg", "s_sleep", "s_setprio", "s_trap",
                              "s_icache", "s_set_gpr_idx_mode", "s_setkill"))
        return 8 if literal and not (sopk or sopp) else 4
    if op.startswith("v_"):
        if op.endswith(("_e32", "_sdwa", "_dpp")) or op in _VOP1_BARE:
            return 8 if literal or op.endswith(("_sdwa", "_dpp")) else 4
        return 8
    return 4
