"""Register usage (VGPR/AGPR/SGPR) from ISA text: ranges count to their last index.

Two sources, in order of authority: compiler resource metadata when the text carries it
(`.vgpr_count`/`.agpr_count`/`.sgpr_count`, `.amdhsa_next_free_vgpr`/`.amdhsa_accum_offset`/
`.amdhsa_next_free_sgpr`), else a scan of instruction operands (a lower bound: the allocation is
at least the highest register index used + 1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from kerneltrace.records import record

# Operand tokens. `acc` is the older spelling of AGPRs (acc0, acc[0:3]).
# Matched on lower-cased text; \b keeps `.lbb0_v9`, `sc0`, `vmcnt(0)` and `0xa1` out.
_REGISTER = re.compile(r"\b(v|a|acc|s)(?:(\d+)|\[(\d+)\s*:\s*(\d+)\])(?![\w\[])")
# The patterns below are compiled on first use (re's cache), behind a str test each match needs.
_VCC = r"(?<![\w.$])vcc(?:_lo|_hi)?(?![\w])"  # on lower-cased text: holds "vcc"
# Opcodes that read or write VCC implicitly (VOPC / VOP2 carry forms, vcc branches).
_IMPLICIT_VCC = (r"^(v_cmpx?_\w*_e32|v_cndmask_b32_e32|v_(add|sub|subrev)(c|b|brev)?_co_u32_e32|"
                 r"v_(add|sub|subrev)_co_ci_u32_e32|v_div_fmas_\w+|s_cbranch_vcc\w*)")
_IMPLICIT_VCC_STARTS = ("v_cmp", "v_cndmask_b32_e32", "v_add", "v_sub", "v_div_fmas_", "s_cbranch_vcc")
_MFMA_STARTS = ("v_mfma", "v_smfmac")

# Resource metadata as printed by the compiler (YAML note or .amdhsa directives). Compiled on
# first use (re's cache): traces rarely carry them, and scan_registers tests for them first.
_META_PATTERNS: dict[str, str] = {
    "vgpr_count": r"\.vgpr_count:\s*(\d+)",
    "agpr_count": r"\.agpr_count:\s*(\d+)",
    "sgpr_count": r"\.sgpr_count:\s*(\d+)",
    "next_free_vgpr": r"\.amdhsa_next_free_vgpr\s+(\d+)",
    "accum_offset": r"\.amdhsa_accum_offset\s+(\d+)",
    "next_free_sgpr": r"\.amdhsa_next_free_sgpr\s+(\d+)",
}


@record(frozen=True)
class RegisterUsage:
    """Registers a kernel uses. `source` is "isa-scan", "metadata" or "none" (nothing found).

    arch_vgprs / agprs / sgprs are counts (highest index + 1). From an ISA scan they are lower
    bounds and sgprs excludes VCC/FLAT_SCRATCH/XNACK_MASK (the occupancy model adds the per-arch
    reserved SGPRs). `accum_offset` is set only when metadata states it.
    """

    arch_vgprs: int
    agprs: int
    sgprs: int
    source: str
    uses_vcc: bool = False
    has_mfma: bool = False
    accum_offset: int | None = None

    @property
    def vgpr_form_mfma(self) -> bool:
        """MFMA accumulating in arch VGPRs (no AGPR used): Accum_VGPR_Count 0 is then genuine."""
        return self.has_mfma and self.agprs == 0

    def to_dict(self) -> dict:
        return {
            "arch_vgprs": self.arch_vgprs,
            "agprs": self.agprs,
            "sgprs": self.sgprs,
            "source": self.source,
            "uses_vcc": self.uses_vcc,
            "has_mfma": self.has_mfma,
            "accum_offset": self.accum_offset,
        }


_COMMENT = r"(//|;)[^\n]*"  # compiled on first use: few traces carry inline comments


def _scan(asms: Iterable[str]) -> RegisterUsage | None:
    # One pass over the joined text: opcode names never match the register patterns (a letter
    # or "_" follows their v/s/a), so only comments and label rows have to be removed.
    lines = [line for line in asms if line and not line.lstrip().startswith((";", "."))]
    opcodes = {parts[0].lower() for parts in (line.split(None, 1) for line in lines) if parts}
    if not opcodes:
        return None
    text = "\n".join(lines)
    if ";" in text or "//" in text:
        text = re.sub(_COMMENT, "", text)
    text = text.lower()
    highest = {"v": -1, "a": -1, "s": -1}
    # each distinct token once (a kernel names a few hundred registers thousands of times)
    for kind, single, _first, last in set(_REGISTER.findall(text)):
        key = "a" if kind == "acc" else kind
        index = int(single or last)
        if index > highest[key]:
            highest[key] = index
    uses_vcc = ("vcc" in text and re.search(_VCC, text) is not None) or any(
        re.match(_IMPLICIT_VCC, op) for op in opcodes if op.startswith(_IMPLICIT_VCC_STARTS))
    has_mfma = any(op.startswith(_MFMA_STARTS) for op in opcodes)
    return RegisterUsage(
        arch_vgprs=highest["v"] + 1,
        agprs=highest["a"] + 1,
        sgprs=highest["s"] + 1,
        source="isa-scan",
        uses_vcc=uses_vcc,
        has_mfma=has_mfma,
    )


def parse_resource_metadata(text: str) -> RegisterUsage | None:
    """Register counts from compiler resource metadata in `text`, or None when absent.

    `.vgpr_count` (code-object metadata) is the combined VGPR count on gfx90a+ (arch + AGPRs);
    with `.agpr_count` the arch part is the difference. `.amdhsa_next_free_vgpr` with
    `.amdhsa_accum_offset` splits the same way.
    """
    found: dict[str, int] = {}
    for key, pattern in _META_PATTERNS.items():
        match = re.search(pattern, text)
        if match:
            found[key] = int(match.group(1))
    accum_offset = found.get("accum_offset")
    if "vgpr_count" in found:
        agprs = found.get("agpr_count", 0)
        arch = max(found["vgpr_count"] - agprs, 0) if agprs else found["vgpr_count"]
        sgprs = found.get("sgpr_count", found.get("next_free_sgpr", 0))
        return RegisterUsage(arch, agprs, sgprs, "metadata", accum_offset=accum_offset)
    if "next_free_vgpr" in found:
        total = found["next_free_vgpr"]
        if accum_offset is not None and accum_offset < total:
            arch, agprs = accum_offset, total - accum_offset
        else:
            arch, agprs = total, 0
        return RegisterUsage(arch, agprs, found.get("next_free_sgpr", 0), "metadata",
                             accum_offset=accum_offset)
    return None


def scan_registers(asms: Iterable[str]) -> RegisterUsage:
    """Register usage of a kernel from its ISA lines (label rows are skipped).

    Metadata lines in the text win over the operand scan; the scan counts `v[172:175]` as 176
    VGPRs and `a[8:11]` as 12 AGPRs. With no instruction at all the result has source "none".
    """
    lines = list(asms)
    joined = "\n".join(line for line in lines if line and ("." in line))
    metadata = parse_resource_metadata(joined) if ".vgpr_count" in joined or ".amdhsa_" in joined else None
    if metadata is not None:
        scanned = _scan(lines)
        if scanned is None:
            return metadata
        return RegisterUsage(
            arch_vgprs=metadata.arch_vgprs,
            agprs=metadata.agprs,
            sgprs=metadata.sgprs,
            source="metadata",
            uses_vcc=scanned.uses_vcc,
            has_mfma=scanned.has_mfma,
            accum_offset=metadata.accum_offset,
        )
    scanned = _scan(lines)
    if scanned is None:
        return RegisterUsage(0, 0, 0, "none")
    return scanned


def registers(operand: str) -> set[tuple[str, int]]:
    """Registers named in an operand string: `v[4:7]` → {(v,4)…(v,7)}; `s5` → {(s,5)}; AGPRs as "a"."""
    found: set[tuple[str, int]] = set()
    for kind, single, first, last in _REGISTER.findall(operand.lower()):
        key = "a" if kind == "acc" else kind
        if single:
            found.add((key, int(single)))
        else:
            found.update((key, i) for i in range(int(first), int(last) + 1))
    return found


def operands(asm: str) -> list[str]:
    """Operands after the opcode, comma separated (modifiers such as `offset:16` stay attached)."""
    parts = asm.strip().split(None, 1)
    if len(parts) < 2:
        return []
    return [op.strip() for op in parts[1].split(",")]


_NO_DESTINATION = ("s_waitcnt", "s_wait_", "s_nop", "s_barrier", "s_branch", "s_cbranch",
                   "s_endpgm", "s_sendmsg", "s_setprio", "s_sleep", "s_cmp", "s_bitcmp",
                   "s_dcache", "s_icache", "s_trap", "s_setpc")


def _no_vector_destination(op: str, asm: str) -> bool:
    """A memory instruction whose first operand is an address or data, not a destination: a
    load straight into LDS (`buffer_load_dword v2, s[8:11], 0 offen lds`, `global_load_lds_*`;
    its destination is LDS at M0) or an atomic without return (no `glc`/`sc0`)."""
    if "load" in op:
        return "_lds" in op or " lds" in asm.lower()
    if "atomic" in op:
        text = asm.lower()
        return not (" glc" in text or " sc0" in text)
    return False


@lru_cache(maxsize=16384)
def reads(asm: str) -> frozenset[tuple[str, int]]:
    """Registers an instruction reads: every operand of a store, a scalar compare (or another
    instruction without a destination), a load into LDS or an atomic without return, else all
    but the destination."""
    ops = operands(asm)
    first = asm.split(None, 1)[0].lower() if asm.strip() else ""
    every = ("store" in first or "write" in first or first.startswith(_NO_DESTINATION)
             or _no_vector_destination(first, asm))
    sources = ops if every else ops[1:]
    return frozenset(registers(", ".join(sources))) if sources else frozenset()


@lru_cache(maxsize=16384)
def writes(asm: str) -> frozenset[tuple[str, int]]:
    """Registers an instruction writes: its first operand, except for stores, compares (SCC/VCC
    only, VOPC e32), waits and branches, which write no named register."""
    op = asm.split(None, 1)[0].lower() if asm.strip() else ""
    if op.startswith(_NO_DESTINATION) or "store" in op or "write" in op or _no_vector_destination(op, asm):
        return frozenset()
    if op.startswith(("v_cmp", "v_cmpx")) and op.endswith("_e32"):
        return frozenset()
    ops = operands(asm)
    return frozenset(registers(ops[0])) if ops else frozenset()
