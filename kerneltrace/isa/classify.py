"""Instruction types: opcode token → one of STALL_TYPES, plus waitcnt counter parsing.

Classification works on the opcode token only (anchored prefixes, never substrings of the whole
line), for CDNA (gfx90a/gfx942/gfx950) and RDNA/gfx11/gfx12/gfx1250 spellings. The rules and the
mixed-wait decision are documented in docs/isa-and-occupancy.md.
"""

from __future__ import annotations

import re
from functools import lru_cache

VMEM_LOAD = "VMEM-load"
VMEM_STORE = "VMEM-store"
VMEM_WAIT = "VMEM-wait"
LDS = "LDS"
LDS_SMEM_WAIT = "LDS/SMEM-wait"
EXP_WAIT = "EXP-wait"
SMEM = "SMEM"
BARRIER = "barrier"
MFMA = "MFMA"
VALU = "VALU"
SALU = "SALU"
BRANCH = "branch"
NOP = "nop"
OTHER = "other"

# Display order (memory first, then sync, then compute, then control).
STALL_TYPES: tuple[str, ...] = (
    VMEM_LOAD,
    VMEM_STORE,
    VMEM_WAIT,
    LDS,
    LDS_SMEM_WAIT,
    EXP_WAIT,
    SMEM,
    BARRIER,
    MFMA,
    VALU,
    SALU,
    BRANCH,
    NOP,
    OTHER,
)

# Encoding suffixes that do not change what the instruction does (longest first, so `_dpp16`
# is stripped whole, not as `_dpp` + `16`).
ENCODING_SUFFIXES: tuple[str, ...] = ("_vop3p", "_dpp16", "_dpp8", "_sdwa", "_vop3", "_e32", "_e64", "_dpp")
# The longest real opcode is ~40 characters; a longer first token is no instruction. Parsing looks
# at this many characters of an ISA line at most, so hostile text costs linear, bounded time.
MAX_OPCODE_CHARS = 128
MAX_ASM_CHARS = 4096

# Counter name → the wait type it belongs to. gfx9/10/11 `s_waitcnt` counters and the split
# gfx12 / gfx1250 `s_wait_*cnt` counters. vscnt (gfx10/11) counts VMEM stores.
COUNTER_TYPE: dict[str, str] = {
    "vmcnt": VMEM_WAIT,
    "vscnt": VMEM_WAIT,
    "loadcnt": VMEM_WAIT,
    "storecnt": VMEM_WAIT,
    "samplecnt": VMEM_WAIT,
    "bvhcnt": VMEM_WAIT,
    "xcnt": VMEM_WAIT,
    "asynccnt": VMEM_WAIT,
    "tensorcnt": VMEM_WAIT,
    "lgkmcnt": LDS_SMEM_WAIT,
    "dscnt": LDS_SMEM_WAIT,
    "kmcnt": LDS_SMEM_WAIT,
    "expcnt": EXP_WAIT,
}

# When one wait names several counters, the instruction's single type is the first present in
# this order (the long-latency vector-memory counter dominates; see the docs "mixed-wait rule").
_WAIT_PRIORITY: tuple[str, ...] = (VMEM_WAIT, LDS_SMEM_WAIT, EXP_WAIT)

_COUNTER_ARG = re.compile(r"\b([a-z]+cnt)(?:_sat)?\(\s*(\d+)\s*\)")
_NUMBER = re.compile(r"^(0x[0-9a-f]+|\d+)$")

# s_waitcnt simm16 layouts: counter → list of (shift, width) bit fields, low bits first.
# gfx9 (gfx90a/gfx940/gfx942/gfx950) and gfx10: vmcnt 3:0 + 15:14, expcnt 6:4, lgkmcnt 11:8.
# gfx11: expcnt 2:0, lgkmcnt 9:4, vmcnt 15:10. (LLVM AMDGPU operand docs gfx940/gfx11 _waitcnt.)
WAITCNT_LAYOUTS: dict[str, dict[str, list[tuple[int, int]]]] = {
    "gfx9": {"vmcnt": [(0, 4), (14, 2)], "expcnt": [(4, 3)], "lgkmcnt": [(8, 4)]},
    "gfx11": {"vmcnt": [(10, 6)], "expcnt": [(0, 3)], "lgkmcnt": [(4, 6)]},
}

# gfx12 s_wait_*: counters named by the opcode; the combined forms pack two 6-bit fields
# (first counter in bits 13:8, second in bits 5:0).
_GFX12_COMBINED: dict[str, tuple[str, str]] = {
    "s_wait_loadcnt_dscnt": ("loadcnt", "dscnt"),
    "s_wait_storecnt_dscnt": ("storecnt", "dscnt"),
}

# ---------------------------------------------------------------------------------------------
# Opcode tables (anchored: exact names or prefixes of the opcode token).

_MATRIX_PREFIXES = ("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")
_VMEM_PREFIXES = ("buffer_", "tbuffer_", "global_", "flat_", "scratch_", "image_", "tensor_")
_SMEM_PREFIXES = (
    "s_load_",
    "s_store_",
    "s_buffer_load_",
    "s_buffer_store_",
    "s_scratch_load_",
    "s_scratch_store_",
    "s_atomic_",
    "s_buffer_atomic_",
    "s_dcache_",
    "s_atc_probe",
    "s_prefetch_",
    "s_gl1_inv",
)
_SMEM_EXACT = frozenset({"s_memtime", "s_memrealtime", "s_get_waveid_in_workgroup"})
_BRANCH_PREFIXES = ("s_cbranch", "s_setpc", "s_swappc", "s_call", "s_rfe")
_BRANCH_EXACT = frozenset({"s_branch", "s_subvector_loop_begin", "s_subvector_loop_end"})
_NOP_EXACT = frozenset({"s_nop"})
# Program control, scheduling hints and messages: not SALU arithmetic, carry little stall.
_OTHER_PREFIXES = (
    "s_endpgm",
    "s_sendmsg",
    "s_trap",
    "s_sleep",
    "s_setprio",
    "s_delay_alu",
    "s_waitcnt_depctr",
    "s_wait_alu",
    "s_wait_event",
    "s_icache_inv",
    "s_code_end",
    "s_ttracedata",
    "s_set_inst_prefetch_distance",
    "s_inst_prefetch",
    "s_clause",
    "s_version",
    "s_singleuse_vdst",
    "s_incperflevel",
    "s_decperflevel",
)
# Loads for VMEM: a `load` token, or an image read (sample/gather/bvh/resinfo).
_VMEM_LOAD_TOKENS = ("load", "sample", "gather4", "bvh", "get")


def _first_token(asm: str) -> str:
    """The first whitespace-separated token of the first MAX_ASM_CHARS characters ("" if none)."""
    parts = asm[:MAX_ASM_CHARS].split(None, 1)
    return parts[0] if parts else ""


@lru_cache(maxsize=16384)  # ~14 calls per instruction across the structure analyses
def opcode(asm: str) -> str:
    """First token of the instruction text, lower-case ("" for empty text).

    At most MAX_OPCODE_CHARS characters: a longer token is no opcode (it classifies as "other").
    """
    return _first_token(asm)[:MAX_OPCODE_CHARS].lower().rstrip(",")


def strip_encoding_suffixes(op: str) -> str:
    """``op`` without its trailing encoding suffixes (linear time: no backtracking regex)."""
    stripped = True
    while stripped:
        stripped = False
        for suffix in ENCODING_SUFFIXES:
            if op.endswith(suffix):
                op = op[: -len(suffix)]
                stripped = True
                break
    return op


def base_opcode(asm_or_opcode: str) -> str:
    """Opcode with encoding suffixes (_e32/_e64/_sdwa/_dpp...) stripped, for matching only."""
    return strip_encoding_suffixes(opcode(asm_or_opcode))


def _parse_int(token: str) -> int | None:
    token = token.strip().lower()
    if not _NUMBER.match(token):
        return None
    return int(token, 16) if token.startswith("0x") else int(token)


def _decode_fields(value: int, fields: list[tuple[int, int]]) -> int:
    result = 0
    position = 0
    for shift, width in fields:
        result |= ((value >> shift) & ((1 << width) - 1)) << position
        position += width
    return result


def wait_counters(asm: str, layout: str = "gfx9") -> dict[str, int]:
    """Counters a wait instruction waits on, with their threshold: {"vmcnt": 0, "lgkmcnt": 0}.

    Handles `s_waitcnt vmcnt(N) lgkmcnt(M)` (also `&`/`,` separated, `_sat` forms), a raw
    `s_waitcnt <simm16>` decoded with `layout` ("gfx9" for gfx90a/942/950, "gfx11" for RDNA3;
    a raw value of 0 means every counter 0 in any layout), gfx10/11 `s_waitcnt_vscnt/vmcnt/
    lgkmcnt/expcnt <reg>, <imm>`, and gfx12 `s_wait_<counter> <imm>` incl. the combined
    `s_wait_loadcnt_dscnt`. A raw simm16 field at its maximum means "do not wait" and is
    omitted. Returns {} for anything that is not a counter wait.
    """
    op = opcode(asm)
    if not op.startswith("s_wait"):
        return {}
    operands = asm[:MAX_ASM_CHARS].strip()[len(op) :].strip().lower()
    if op == "s_waitcnt":
        named = {name: int(value) for name, value in _COUNTER_ARG.findall(operands)}
        if named:
            return named
        raw = _parse_int(operands)
        if raw is None:
            return {}
        fields = WAITCNT_LAYOUTS.get(layout)
        if fields is None:
            raise ValueError(f"unknown s_waitcnt layout {layout!r}")
        decoded: dict[str, int] = {}
        for name, bit_fields in fields.items():
            value = _decode_fields(raw, bit_fields)
            all_ones = (1 << sum(width for _, width in bit_fields)) - 1
            if value != all_ones:
                decoded[name] = value
        return decoded
    if op in ("s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_expcnt"):
        counter = op.removeprefix("s_waitcnt_")
        value = _parse_int(operands.rsplit(",", 1)[-1]) if operands else None
        return {counter: value if value is not None else 0}
    if op in _GFX12_COMBINED:
        first, second = _GFX12_COMBINED[op]
        raw = _parse_int(operands)
        if raw is None:
            return {first: 0, second: 0}
        return {first: (raw >> 8) & 0x3F, second: raw & 0x3F}
    if op == "s_wait_idle":
        # gfx12: wait until every counter of the wave drains.
        return {"loadcnt": 0, "storecnt": 0, "samplecnt": 0, "bvhcnt": 0, "dscnt": 0, "kmcnt": 0,
                "expcnt": 0}
    counter = op.removeprefix("s_wait_")
    if counter in COUNTER_TYPE:
        raw = _parse_int(operands) if operands else 0
        return {counter: raw if raw is not None else 0}
    return {}


def wait_kinds(asm: str) -> list[str]:
    """All wait types a wait instruction involves, in STALL_TYPES order (empty if not a wait).

    `s_waitcnt vmcnt(0) lgkmcnt(0)` → ["VMEM-wait", "LDS/SMEM-wait"], so a caller can split or
    attribute a mixed wait to every counter; classify() keeps only the first of these.
    """
    kinds = {COUNTER_TYPE[name] for name in wait_counters(asm) if name in COUNTER_TYPE}
    return [kind for kind in STALL_TYPES if kind in kinds]


def _vmem_type(op: str) -> str:
    tokens = op.split("_")[1:]
    if "atomic" in tokens or any(token.startswith("atomic") for token in tokens):
        return VMEM_STORE
    for token in tokens:
        if token.startswith("store"):
            return VMEM_STORE
        if token.startswith(_VMEM_LOAD_TOKENS):
            return VMEM_LOAD
    # Cache maintenance (buffer_wbl2, buffer_inv, global_wb, ...) goes down the VMEM write path.
    return VMEM_STORE


def _classify_opcode(op: str) -> str | None:
    if not op:
        return OTHER
    if op.startswith("v_"):
        return MFMA if op.startswith(_MATRIX_PREFIXES) else VALU
    if op.startswith("ds_"):
        return LDS
    if op.startswith(_VMEM_PREFIXES):
        return _vmem_type(op)
    if not op.startswith("s_"):
        return OTHER
    if op.startswith("s_barrier"):
        return BARRIER
    if op.startswith(_SMEM_PREFIXES) or op in _SMEM_EXACT:
        return SMEM
    if op.startswith(_BRANCH_PREFIXES) or op in _BRANCH_EXACT:
        return BRANCH
    if op in _NOP_EXACT:
        return NOP
    if op.startswith(_OTHER_PREFIXES):
        return OTHER
    if op.startswith("s_wait"):
        return None  # a counter wait: resolved from its operands by classify()
    return SALU


@lru_cache(maxsize=4096)
def _classify_token(token: str) -> str | None:
    return _classify_opcode(strip_encoding_suffixes(token.lower().rstrip(",")))


def classify(asm: str) -> str:
    """Instruction type of one ISA line: one of STALL_TYPES ("other" for labels/empty text).

    Waits take the type of their counters; a mixed wait takes the first of VMEM-wait,
    LDS/SMEM-wait, EXP-wait that it involves (use wait_kinds() to see all of them).
    """
    stripped = asm.lstrip()
    if not stripped or stripped[0] == ";":
        return OTHER
    kind = _classify_token(_first_token(stripped)[:MAX_OPCODE_CHARS])
    if kind is not None:
        return kind
    kinds = wait_kinds(asm)
    for candidate in _WAIT_PRIORITY:
        if candidate in kinds:
            return candidate
    # A wait with no countable operand (e.g. `s_waitcnt 0xffff`, which waits for nothing).
    return OTHER


def is_memory_load(asm: str) -> bool:
    """True for instructions that read memory into registers: VMEM loads, SMEM, LDS reads."""
    kind = classify(asm)
    op = base_opcode(asm)
    if kind == VMEM_LOAD:
        return True
    if kind == SMEM:
        return op.startswith(("s_load_", "s_buffer_load_", "s_scratch_load_"))
    if kind == LDS:
        return op.startswith(("ds_read", "ds_load", "ds_bpermute", "ds_permute", "ds_swizzle"))
    return False


def is_wait(asm: str) -> bool:
    """True for counter waits (s_waitcnt*, s_wait_*cnt, s_wait_idle)."""
    return bool(wait_counters(asm))


# Decoder instruction categories (rocprofiler_thread_trace_decoder_inst_category_t), as found
# in per-wave files `instructions[i][1]` (docs/rocprof-outputs.md §8.9).
DECODER_CATEGORIES: dict[int, str] = {
    0: "NONE",
    1: "SMEM",
    2: "SALU",
    3: "VMEM",
    4: "FLAT",
    5: "LDS",
    6: "VALU",
    7: "JUMP",
    8: "NEXT",
    9: "IMMED",
    10: "CONTEXT",
    11: "MESSAGE",
    12: "BVH",
    13: "LAST",
}

# Legacy rocprofv2 code.json `inst_type` (docs/rocprof-outputs.md §8.7); 100 marks comment rows.
LEGACY_INST_TYPES: dict[int, str] = {
    1: "SMEM",
    2: "SALU",
    3: "VMEM",
    4: "FLAT",
    5: "LDS",
    6: "VALU",
    9: "IMMED",
    10: "JUMP",
    11: "MESSAGE",
    100: "COMMENT",
}


def decoder_category_name(category: int) -> str:
    """Name of a decoder instruction category (0..13); "UNKNOWN(<n>)" for other values."""
    return DECODER_CATEGORIES.get(category, f"UNKNOWN({category})")


def legacy_inst_type_name(inst_type: int) -> str:
    """Name of a legacy rocprofv2 `inst_type` code; "UNKNOWN(<n>)" for other values."""
    return LEGACY_INST_TYPES.get(inst_type, f"UNKNOWN({inst_type})")


def counters_incremented(asm: str, *, stores_in_vmcnt: bool = True) -> frozenset[str]:
    """The gfx9 wait counters an instruction increments (what a later `s_waitcnt` can drain).

    vmcnt: vector-memory loads (MUBUF/MTBUF/GLOBAL/SCRATCH/FLAT), and on gfx9/CDNA stores and
    atomics too (`stores_in_vmcnt`; gfx10+ count stores in vscnt); lgkmcnt: LDS (`ds_*`), scalar
    memory (`s_load`, `s_buffer_load`, …) and messages; FLAT counts in both (CDNA3 ISA guide,
    "S_WAITCNT" and "Data dependency resolution")."""
    op = opcode(asm)
    if op.startswith("flat_"):
        return frozenset({"vmcnt", "lgkmcnt"})
    if op.startswith(_VMEM_PREFIXES):
        if _vmem_type(op) == VMEM_STORE and not stores_in_vmcnt:
            return frozenset({"vscnt"})
        return frozenset({"vmcnt"})
    if op.startswith("ds_") or op.startswith(_SMEM_PREFIXES) or op in _SMEM_EXACT \
            or op.startswith("s_sendmsg"):
        return frozenset({"lgkmcnt"})
    return frozenset()
