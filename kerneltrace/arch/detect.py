"""Resolve the GPU architecture: --arch → agent/kernel metadata (or device assembly) → ISA evidence → unknown.

ISA evidence narrows a candidate set (each clue says "only these targets have this"); the answer
is certain only when exactly one target remains. Never a silent default. The evidence table and
its sources are in docs/isa-and-occupancy.md ("Detection evidence").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kerneltrace.arch.table import ARCHES, get_arch, normalize_target
from kerneltrace.errors import InputError
from kerneltrace.records import field, record

# Targets the evidence can point to: the table plus gfx908 (CDNA1), which shares most gfx9
# spellings and must stay a candidate even though it has no occupancy entry.
GFX9_TARGETS = frozenset({"gfx908", "gfx90a", "gfx942", "gfx950"})
GFX11_TARGETS = frozenset({"gfx1100", "gfx1101", "gfx1102"})
GFX12_TARGETS = frozenset({"gfx1200", "gfx1201"})
ALL_TARGETS = GFX9_TARGETS | GFX11_TARGETS | GFX12_TARGETS | {"gfx1250"}


@record(frozen=True)
class Clue:
    """An opcode (or operand-modifier) pattern and the targets that have it."""

    label: str
    pattern: str  # compiled on first use (re's cache): most runs take the arch from agent_info
    targets: frozenset[str]
    on_line: bool = False  # match the whole instruction line (modifiers), not just the opcode
    prefix: str = ""  # what every text the pattern matches starts with (see _literal_prefix)

    def search(self, text: str) -> bool:
        return re.search(self.pattern, text) is not None


_PATTERN_SYNTAX = frozenset("\\.^$*+?{}[]|()")


def _literal_prefix(pattern: str) -> str:
    """The literal text right after a leading `^` up to the first pattern character ("" when the
    pattern is not anchored or branches at its top level): a text the pattern matches from its start
    begins with it, so opcodes without it need no search (nor the pattern a compile)."""
    if not pattern.startswith("^"):
        return ""
    depth = 0
    for char in pattern:
        depth += (char == "(") - (char == ")")
        if char == "|" and depth == 0:
            return ""
    end = 1
    while end < len(pattern) and pattern[end] not in _PATTERN_SYNTAX:
        end += 1
    if end < len(pattern) and pattern[end] in "*?{+":
        end -= 1  # a quantified last character may be absent (or repeated)
    return pattern[1:end]


def _clue(label: str, pattern: str, targets: Iterable[str], on_line: bool = False) -> Clue:
    return Clue(label, pattern, frozenset(targets), on_line, _literal_prefix(pattern))


CLUES: tuple[Clue, ...] = (
    # gfx950 (CDNA4) only.
    _clue("v_mfma_scale_* (block-scaled MFMA)", r"^v_mfma_scale_", {"gfx950"}),
    _clue("*_f8f6f4 MFMA", r"^v_mfma_\w*_f8f6f4$", {"gfx950"}),
    _clue("double-K bf16/f16 MFMA (16x16x32, 32x32x16)",
          r"^v_mfma_f32_(16x16x32|32x32x16)_(bf16|f16)$", {"gfx950"}),
    _clue("ds_read_*_tr_* (transposing LDS read)", r"^ds_read_b\d+_tr_b\d+$", {"gfx950"}),
    _clue("v_permlane16/32_swap", r"^v_permlane(16|32)_swap", {"gfx950"}),
    _clue("v_cvt_scalef32_*", r"^v_cvt_scalef32_", {"gfx950"}),
    _clue("v_prng_b32", r"^v_prng_b32", {"gfx950"}),
    _clue("v_cvt_pk_bf16_f32 (gfx9 family)", r"^v_cvt_pk_bf16_f32", {"gfx950", "gfx1250"}),
    # gfx940/941/942 only (xf32 MFMA removed on gfx950).
    _clue("v_mfma_*_xf32", r"^v_mfma_\w*_xf32$", {"gfx942"}),
    # gfx940 and later CDNA.
    _clue("fp8/bf8 MFMA", r"^v_mfma_\w*_(fp8|bf8)_(fp8|bf8)$", {"gfx942", "gfx950"}),
    _clue("v_lshl_add_u64", r"^v_lshl_add_u64", {"gfx942", "gfx950", "gfx1250"}),
    _clue("v_mov_b64", r"^v_mov_b64", {"gfx942", "gfx950", "gfx1250"}),
    _clue("sc0/sc1/nt cache-policy modifiers",
          r"^(buffer|global|flat|scratch)_\S+\s.*\b(sc0|sc1|nt)\b", {"gfx942", "gfx950"},
          on_line=True),
    # gfx90a (and gfx908) only.
    _clue("*_1k MFMA (gfx90a spelling)", r"^v_mfma_\w*_1k$", {"gfx90a"}),
    _clue("MFMA without '_' before the type (gfx908/gfx90a spelling)",
          r"^v_mfma_[fi](32|64)_\d+x\d+x\d+(f|bf|i)\d+", {"gfx908", "gfx90a"}),
    _clue("glc/slc modifiers on gfx9 memory ops",
          r"^(buffer|global|flat|scratch)_\S*dword\S*\s.*\b(glc|slc)\b", {"gfx908", "gfx90a"},
          on_line=True),
    _clue("buffer_wbinvl1*", r"^buffer_wbinvl1", {"gfx908", "gfx90a"}),
    # Matrix / accumulation registers: CDNA.
    _clue("v_mfma_* / v_accvgpr_*", r"^(v_mfma|v_accvgpr|v_smfmac)", GFX9_TARGETS),
    _clue("gfx9 memory spellings (dword/ds_read/ds_write)",
          r"^((buffer|global|flat|scratch)_(load|store)_\w*dword|ds_(read|write)\d*_)",
          GFX9_TARGETS),
    _clue("packed f32 VALU (gfx90a+)", r"^v_pk_(fma|mul|add|mov)_(f32|b32)", {"gfx90a", "gfx942", "gfx950"}),
    # RDNA / gfx11+ spellings.
    _clue("v_wmma_*", r"^v_wmma_", GFX11_TARGETS | GFX12_TARGETS | {"gfx1250"}),
    _clue("v_swmmac_*", r"^v_swmmac_", GFX12_TARGETS | {"gfx1250"}),
    _clue("gfx11+ memory spellings (*_b32, ds_load/ds_store)",
          r"^((buffer|global|flat|scratch)_(load|store)_(b\d+|[ui](8|16)|d16_(hi_)?[bui]\d+)$"
          r"|^ds_(load|store)_)",
          GFX11_TARGETS | GFX12_TARGETS | {"gfx1250"}),
    _clue("s_delay_alu / s_sendmsg_rtn", r"^(s_delay_alu|s_sendmsg_rtn)",
          GFX11_TARGETS | GFX12_TARGETS | {"gfx1250"}),
    _clue("s_waitcnt_vscnt (gfx10/11)", r"^s_waitcnt_vscnt", GFX11_TARGETS),
    _clue("gfx12 split waits (s_wait_loadcnt, ...)",
          r"^s_wait_(loadcnt|storecnt|samplecnt|bvhcnt|dscnt|kmcnt|expcnt)",
          GFX12_TARGETS | {"gfx1250"}),
    _clue("gfx12 s_barrier_signal/s_barrier_wait", r"^s_barrier_(signal|wait)",
          GFX12_TARGETS | {"gfx1250"}),
    _clue("s_waitcnt (gfx9-gfx11; gfx12 replaced it)", r"^s_waitcnt$", GFX9_TARGETS | GFX11_TARGETS),
    _clue("gfx1250 waits (s_wait_xcnt/asynccnt/tensorcnt)", r"^s_wait_(xcnt|asynccnt|tensorcnt)",
          {"gfx1250"}),
    _clue("tensor_load_to_lds / tensor_store_from_lds", r"^tensor_(load|store)_", {"gfx1250"}),
)


_MEMORY_PREFIXES = ("buffer_", "global_", "flat_", "scratch_")
_MODIFIER_WORDS = r"\b(sc0|sc1|nt|glc|slc)\b"
_MODIFIERS = ("sc0", "sc1", "nt", "glc", "slc")  # one is in the lower-cased ASCII text of any match


@record(frozen=True)
class ArchResolution:
    """The architecture answer, how it was found, and whether it is certain."""

    name: str | None
    source: str  # "--arch" | "agent_info" (or the caller's metadata label) | "isa" | "unknown"
    certain: bool
    candidates: list[str] = field(default_factory=list)
    evidence: tuple[str, ...] = ()  # clue labels (ISA) or metadata values that decided
    notes: tuple[str, ...] = ()  # disagreements between sources, unsupported targets

    def to_dict(self) -> dict:
        """The hotspot document's "arch" object."""
        return {"name": self.name, "source": self.source, "certain": self.certain,
                "candidates": list(self.candidates)}


def isa_evidence(instructions: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...], bool]:
    """Narrow the target set from ISA text: (remaining targets, clue labels hit, conflict).

    Each instruction may be a bare opcode or a full line (modifier clues need full lines).
    With conflicting clues (empty intersection) the union of the clue sets is returned and the
    conflict flag is set.
    """
    hit: dict[str, Clue] = {}
    opcodes: set[str] = set()
    line_clues = [clue for clue in CLUES if clue.on_line]
    for text in instructions:
        line = text.lstrip()
        if not line or line[0] == ";":
            continue
        op = line.split(None, 1)[0].lower()
        opcodes.add(op)
        # Modifier clues only concern memory instructions that carry a cache-policy word.
        if not op.startswith(_MEMORY_PREFIXES):
            continue
        lowered = line.lower()
        # (re.IGNORECASE also folds a few non-ASCII letters onto s, c, t, l: those lines take the search)
        if ((not lowered.isascii() or any(word in lowered for word in _MODIFIERS))
                and re.search(_MODIFIER_WORDS, line, re.IGNORECASE)):
            for clue in line_clues:
                if clue.label not in hit and clue.search(lowered):
                    hit[clue.label] = clue
    for clue in CLUES:
        if not clue.on_line and any(clue.search(op) for op in opcodes if op.startswith(clue.prefix)):
            hit[clue.label] = clue
    remaining = set(ALL_TARGETS)
    for clue in hit.values():
        remaining &= clue.targets
    if hit and not remaining:
        union: set[str] = set()
        for clue in hit.values():
            union |= clue.targets
        return frozenset(union), tuple(sorted(hit)), True
    return frozenset(remaining), tuple(sorted(hit)), False


def _sorted_targets(targets: Iterable[str]) -> list[str]:
    order = ["gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1102", "gfx1200",
             "gfx1201", "gfx1250"]
    return sorted(targets, key=lambda t: (order.index(t) if t in order else len(order), t))


def resolve_arch(
    explicit: str | None,
    agent_names: list[str],
    opcodes: Iterable[str],
    *,
    metadata_source: str = "agent_info",
) -> ArchResolution:
    """Resolve the arch in the documented order; raises InputError for an unusable --arch."""
    instructions = list(opcodes)
    notes: list[str] = []
    if explicit:
        target = normalize_target(explicit)
        if target is None:
            raise InputError(
                f"--arch {explicit!r} is not a gfx target",
                "--arch",
                "pass a target such as gfx90a, gfx942, gfx950, gfx1100 or gfx1201",
            )
        spec = get_arch(target)
        name = spec.name if spec else target
        metadata = {normalize_target(n) for n in agent_names if normalize_target(n)}
        if metadata and name not in metadata:
            notes.append(f"--arch {name} overrides {metadata_source} ({', '.join(sorted(metadata))})")
        if spec is None:
            notes.append(f"{name} is not in the arch table: occupancy cannot be modelled")
        return ArchResolution(name, "--arch", True, [name], (explicit,), tuple(notes))

    metadata_targets = sorted({t for t in (normalize_target(n) for n in agent_names if n) if t})
    canonical = sorted({(get_arch(t).name if get_arch(t) else t) for t in metadata_targets})
    if len(canonical) == 1:
        name = canonical[0]
        if get_arch(name) is None:
            notes.append(f"{name} is not in the arch table: occupancy cannot be modelled")
        return ArchResolution(name, metadata_source, True, [name], tuple(agent_names), tuple(notes))

    remaining, clues, conflict = isa_evidence(instructions)
    if conflict:
        notes.append("ISA clues disagree: " + "; ".join(clues))
    if len(canonical) > 1:
        # Several GPUs in the metadata: the ISA may tell which one ran the kernel.
        narrowed = [t for t in canonical if t in remaining]
        if len(narrowed) == 1 and not conflict:
            return ArchResolution(narrowed[0], f"{metadata_source}+isa", True, narrowed, clues,
                                  tuple(notes))
        notes.append(f"{metadata_source} lists several GPUs: {', '.join(canonical)}")
        return ArchResolution(None, metadata_source, False, narrowed or canonical, clues,
                              tuple(notes))

    if clues and len(remaining) == 1 and not conflict:
        (name,) = tuple(remaining)
        return ArchResolution(name, "isa", True, [name], clues, tuple(notes))
    candidates = _sorted_targets(remaining if clues else ARCHES.keys())
    if not clues:
        notes.append("no agent_info/kernel metadata and no distinguishing opcode: pass --arch")
    return ArchResolution(None, "unknown", False, candidates, clues, tuple(notes))
