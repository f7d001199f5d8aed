"""Synthetic kernel descriptions (KernelSpec, SynthInstruction) and the ready-made demo kernels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate

SUPPORTED_ARCHES = ("gfx90a", "gfx942", "gfx950")


@dataclass(frozen=True)
class SynthInstruction:
    """One instruction of a synthetic kernel.

    ``line`` is a line of the kernel's synthetic source file (``None`` → unmapped, Source "").
    ``issue_cycles`` is the issue cost, ``stall_cycles`` a fixed per-issue stall (pipe busy,
    register dependency), ``latency_cycles`` the time until a memory result returns (memory
    instructions only; it drives the stall of the ``s_waitcnt`` that drains it).
    ``executed`` False marks code that no traced wave runs (code.json rows with Hit 0).
    """

    asm: str
    line: int | None = None
    issue_cycles: int = 4
    stall_cycles: int = 0
    latency_cycles: int = 0
    executed: bool = True


@dataclass(frozen=True)
class LoopRegion:
    """Instructions ``first..last`` (indexes into KernelSpec.instructions, inclusive) run ``iterations`` times."""

    first: int
    last: int
    iterations: int


@dataclass(frozen=True)
class ExitGate:
    """Waves that get no work: the waves of every slot from ``busy_slots`` on take the branch
    ``branch`` (an instruction index) straight to ``target`` (the ``s_endpgm``), the way a decode
    or split-K kernel's workgroups leave at an empty work range. ``target`` must lie after every
    instruction the busy waves run in between (the loop included)."""

    branch: int
    target: int
    busy_slots: int = 1

    def exits(self, slot: int, wv: int) -> bool:
        return slot >= self.busy_slots


@dataclass(frozen=True)
class WaveLayout:
    """Traced waves: SE × SIMD × slot, ``waves_per_slot`` waves run one after another per slot."""

    shader_engines: int = 1
    simds: int = 4
    slots: int = 2
    waves_per_slot: int = 1
    target_cu: int = 1
    # extra CUs per SE that appear only in occupancy.json (no instructions): real captures list
    # every CU of a traced SE, 8 on gfx950 (9–10 on gfx942) when the grid fills the GPU
    other_cus: int = 7

    @property
    def total_waves(self) -> int:
        return self.shader_engines * self.simds * self.slots * self.waves_per_slot


@dataclass(frozen=True)
class KernelResources:
    """Dispatch metadata as rocprofv3 prints it in kernel_trace.csv (before the gfx950 quirk)."""

    arch_vgprs: int = 32
    accum_vgprs: int = 0
    sgprs: int = 32
    lds_bytes: int = 0
    scratch_bytes: int = 0
    workgroup: tuple[int, int, int] = (256, 1, 1)
    grid: tuple[int, int, int] = (65536, 1, 1)


@dataclass(frozen=True)
class KernelSpec:
    """Everything needed to generate a capture of one kernel dispatch."""

    name: str  # symbol as in the code.json label row (mangled for C++)
    demangled: str  # label-row Source; "" when the symbol cannot be demangled
    arch: str
    instructions: tuple[SynthInstruction, ...]
    loop: LoopRegion | None = None
    waves: WaveLayout = field(default_factory=WaveLayout)
    exit_gate: ExitGate | None = None  # optional: most waves leave without work
    resources: KernelResources = field(default_factory=KernelResources)
    source_path: str = ""  # virtual absolute path of the kernel source ("" → no source)
    source_text: str = ""
    seed: int = 0
    code_object_id: int = 2
    base_vaddr: int = 6400
    start_cycle: int = 70000
    duration_ns: int = 20000  # typical wall time of one dispatch (kernel_trace / stats CSVs)

    @property
    def display_name(self) -> str:
        """The formatted name rocprofv3 prints in CSVs (demangled when possible)."""
        return self.demangled or self.name

    def with_seed(self, seed: int) -> KernelSpec:
        return replace(self, seed=seed)


def _mfma_mnemonic(arch: str) -> str:
    # Spelling differs per generation (gfx90a has no underscore before the type; gfx950 doubles K).
    return {
        "gfx90a": "v_mfma_f32_32x32x8f16",
        "gfx942": "v_mfma_f32_32x32x8_f16",
        "gfx950": "v_mfma_f32_32x32x16_f16",
    }[arch]


def _mfma_cycles(mnemonic: str) -> int:
    """Issue cost of an MFMA = its pass latency from the single MFMA table."""
    from kerneltrace.isa.mfma import mfma_info

    info = mfma_info(mnemonic)
    return info.cycles if info else 32


def with_branch_immediates(instructions: Sequence[SynthInstruction],
                            targets: Mapping[int, int]) -> tuple[SynthInstruction, ...]:
    """Append the SOPP immediate to each branch ``at`` so that it lands on instruction ``targets[at]``.

    The immediate is the signed dword offset from the instruction after the branch
    (target = pc + 4 + 4 × signed16(imm), kerneltrace/analysis/loops.py), computed from the same
    encoding sizes that give the code.json Vaddr column, and printed unsigned as the decoder does.
    """
    # lazy: documents imports this module (it owns the encoding sizes behind Vaddr)
    from kerneltrace.synth.categories import instruction_size

    offsets = list(accumulate((instruction_size(ins.asm) for ins in instructions), initial=0))
    out = list(instructions)
    for at, to in targets.items():
        dwords = (offsets[to] - offsets[at] - 4) // 4
        out[at] = replace(out[at], asm=f"{out[at].asm} {dwords & 0xFFFF}")
    return tuple(out)


def _check_arch(arch: str) -> None:
    if arch not in SUPPORTED_ARCHES:
        from kerneltrace.errors import InputError

        raise InputError(
            f"unsupported synthetic arch {arch!r}",
            "kerneltrace.synth",
            f"use one of {', '.join(SUPPORTED_ARCHES)}",
        )


GEMM_SOURCE_PATH = "/synthetic/kernels/demo_gemm.py"

# Line numbers below refer to this text; keep them in sync (tests check the mapping).
GEMM_SOURCE = '''\
# SYNTHETIC kernel source generated by kerneltrace.synth -- not a real kernel.
# It only gives the synthetic trace realistic source lines to point at.
import flydsl as flyc
import flydsl.ops as fx

TILE_M = 32
TILE_N = 32
TILE_K = 8


@flyc.kernel
def demo_gemm_kernel(a_ptr, b_ptr, c_ptr, scale_ptr, k_tiles):
    a_rsrc = fx.make_buffer(a_ptr)
    b_rsrc = fx.make_buffer(b_ptr)
    c_rsrc = fx.make_buffer(c_ptr)
    b_smem = fx.lds_alloc((TILE_K, TILE_N), fx.f16)
    acc = fx.zeros((TILE_M, TILE_N), fx.f32)
    for k in range(k_tiles):
        a_frag = fx.buffer_load(a_rsrc, fx.a_offset(k))
        b_tile = [fx.buffer_load(b_rsrc, fx.b_offset(k, i)) for i in range(4)]
        fx.lds_store(b_smem, b_tile)
        fx.barrier()
        b_frag = fx.lds_load(b_smem, fx.lane_offset())
        acc = fx.mfma(a_frag, b_frag, acc)
        scale = fx.scalar_load(scale_ptr, k)
        acc = acc * scale
    if fx.has_tail(k_tiles):
        acc = fx.tail_fixup(acc)
    fx.buffer_store(c_rsrc, fx.c_offset(), fx.to_f16(acc))
'''

# Source lines of the planted hotspots (1-based, in GEMM_SOURCE).
GEMM_LINES = {
    "decorator": 11,  # pattern 5: compiler glue attributed to the entry line
    "a_rsrc": 13,
    "loop": 18,
    "a_load": 19,  # pattern 1: load inside the MFMA loop, waited on right away
    "b_load": 20,  # pattern 2: back-to-back buffer_load burst
    "lds_store": 21,
    "barrier": 22,
    "lds_load": 23,  # pattern 3: ds_read right before its MFMA
    "mfma": 24,  # MFMA dependency chain
    "scale_load": 25,  # pattern 4: scale load right before its use
    "scale_mul": 26,
    "tail_if": 27,
    "tail_fix": 28,
    "store": 29,
}


def demo_gemm(arch: str = "gfx942", *, iterations: int = 8, waves_per_slot: int = 1,
              shader_engines: int = 4, seed: int = 0) -> KernelSpec:
    """A small MFMA GEMM-like kernel with the five planted hotspot patterns (see examples/README.md)."""
    _check_arch(arch)
    L = GEMM_LINES
    dec = L["decorator"]
    mfma = _mfma_mnemonic(arch)
    mfma_cycles = _mfma_cycles(mfma)
    prologue = [
        SynthInstruction("s_load_dwordx8 s[4:11], s[0:1], 0x0", dec, latency_cycles=420),
        SynthInstruction("s_load_dwordx2 s[12:13], s[0:1], 0x20", dec, latency_cycles=420),
        SynthInstruction("v_lshlrev_b32_e32 v1, 4, v0", dec),
        SynthInstruction("v_and_b32_e32 v2, 63, v0", dec),
        SynthInstruction("s_mov_b32 s47, 0x27000", L["a_rsrc"]),
        SynthInstruction("s_mov_b32 s46, -1", L["a_rsrc"]),
        SynthInstruction("s_waitcnt lgkmcnt(0)", dec),
        SynthInstruction("s_and_b32 s5, s5, 0xffff", L["a_rsrc"]),
        SynthInstruction("v_mov_b32_e32 v63, 0", dec),
        SynthInstruction("v_accvgpr_write_b32 a0, 0", dec),
        SynthInstruction("v_accvgpr_write_b32 a31, 0", dec),
        SynthInstruction("s_mov_b32 s20, 0", L["loop"]),
    ]
    loop_body = [
        # address glue inside the loop, attributed to the entry line like FlyDSL does
        SynthInstruction("v_add_u32_e32 v3, s20, v1", dec),
        SynthInstruction("v_add_u32_e32 v4, 0x400, v3", dec),
        # pattern 2: a burst of B loads; later loads stall on issue (vector memory queue
        # full) and the wait right behind the burst exposes the whole memory latency
        SynthInstruction("buffer_load_dwordx4 v[12:15], v4, s[8:11], 0 offen", L["b_load"],
                         stall_cycles=24, latency_cycles=760),
        SynthInstruction("buffer_load_dwordx4 v[16:19], v4, s[8:11], 0 offen offset:256",
                         L["b_load"], stall_cycles=96, latency_cycles=760),
        SynthInstruction("buffer_load_dwordx4 v[20:23], v4, s[8:11], 0 offen offset:512",
                         L["b_load"], stall_cycles=180, latency_cycles=760),
        SynthInstruction("buffer_load_dwordx4 v[24:27], v4, s[8:11], 0 offen offset:768",
                         L["b_load"], stall_cycles=260, latency_cycles=760),
        SynthInstruction("s_waitcnt vmcnt(0)", L["b_load"]),
        SynthInstruction("ds_write_b128 v2, v[12:15]", L["lds_store"], latency_cycles=64),
        SynthInstruction("ds_write_b128 v2, v[20:23] offset:512", L["lds_store"], latency_cycles=64),
        SynthInstruction("s_waitcnt lgkmcnt(0)", dec),
        SynthInstruction("s_barrier", L["barrier"], stall_cycles=140),
        # pattern 1: the A load is issued inside the MFMA loop and needed two MFMAs later
        SynthInstruction("buffer_load_dwordx4 v[8:11], v3, s[4:7], 0 offen", L["a_load"],
                         stall_cycles=16, latency_cycles=720),
        # pattern 3: ds_read immediately consumed by the MFMA behind an lgkmcnt wait
        SynthInstruction("ds_read_b128 v[28:31], v2", L["lds_load"], latency_cycles=128),
        SynthInstruction("s_waitcnt lgkmcnt(0)", L["lds_load"]),
        # MFMA dependency chain on the same accumulators
        SynthInstruction(f"{mfma} a[0:15], v[44:45], v[28:29], a[0:15]", L["mfma"], issue_cycles=mfma_cycles),
        SynthInstruction(f"{mfma} a[16:31], v[46:47], v[30:31], a[16:31]", L["mfma"], issue_cycles=mfma_cycles),
        SynthInstruction("s_waitcnt vmcnt(0)", L["a_load"]),
        SynthInstruction(f"{mfma} a[0:15], v[8:9], v[28:29], a[0:15]", L["mfma"], issue_cycles=mfma_cycles,
                         stall_cycles=48),
        SynthInstruction(f"{mfma} a[16:31], v[10:11], v[30:31], a[16:31]", L["mfma"], issue_cycles=mfma_cycles,
                         stall_cycles=48),
        # pattern 4: a small scale load issued right before its use
        SynthInstruction("s_load_dword s21, s[12:13], s20", L["scale_load"], latency_cycles=380),
        SynthInstruction("s_waitcnt lgkmcnt(0)", L["scale_load"]),
        SynthInstruction("v_mul_f32_e32 v32, s21, v32", L["scale_mul"], stall_cycles=8),
        SynthInstruction("s_add_u32 s20, s20, 1", L["loop"]),
        SynthInstruction("s_cmp_lt_u32 s20, s14", L["loop"]),
        SynthInstruction("s_cbranch_scc1", L["loop"]),  # back edge, immediate resolved below
    ]
    epilogue = [
        SynthInstruction("s_cmp_eq_u32 s15, 0", L["tail_if"]),
        SynthInstruction("s_cbranch_scc1", L["tail_if"]),  # skips the tail, resolved below
        SynthInstruction("v_add_f32_e32 v32, v32, v33", L["tail_fix"], executed=False),
        SynthInstruction("v_add_f32_e32 v34, v34, v35", L["tail_fix"], executed=False),
        SynthInstruction("v_accvgpr_read_b32 v36, a31", L["tail_fix"], executed=False),
        SynthInstruction("v_cvt_pk_f16_f32 v40, v32, v33", L["store"]),
        SynthInstruction("v_accvgpr_read_b32 v41, a0", L["store"]),
        SynthInstruction("buffer_store_dwordx4 v[40:43], v1, s[16:19], 0 offen", L["store"],
                         stall_cycles=12, latency_cycles=300),
        SynthInstruction("s_waitcnt vmcnt(0)", dec),
        SynthInstruction("s_endpgm", dec, issue_cycles=20),
    ]
    body = prologue + loop_body + epilogue
    first = len(prologue)
    latch = first + len(loop_body) - 1
    tail_branch = latch + 2
    # the tail branch lands on the first instruction after the never-executed tail block
    after_tail = next(i for i in range(tail_branch + 1, len(body)) if body[i].executed)
    instructions = with_branch_immediates(body, {latch: first, tail_branch: after_tail})
    total_vgprs = 64 + 32
    return KernelSpec(
        name="demo_gemm_kernel_0",
        demangled="",
        arch=arch,
        instructions=instructions,
        loop=LoopRegion(first, first + len(loop_body) - 1, iterations),
        waves=WaveLayout(shader_engines=shader_engines, simds=4, slots=2,
                         waves_per_slot=waves_per_slot),
        resources=KernelResources(arch_vgprs=64, accum_vgprs=total_vgprs - 64, sgprs=48,
                                  lds_bytes=16384, workgroup=(256, 1, 1), grid=(77824, 1, 1)),
        source_path=GEMM_SOURCE_PATH,
        source_text=GEMM_SOURCE,
        seed=seed,
        code_object_id=2,
        base_vaddr=7168,
        start_cycle=210000,
        duration_ns=61440,
    )


VEC_ADD_SOURCE_PATH = "/synthetic/src/vec_add.cpp"
VEC_ADD_SOURCE = '''\
// SYNTHETIC kernel source generated by kerneltrace.synth -- not a real kernel.
#include <hip/hip_runtime.h>

__global__ void vec_add_float(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
'''


def demo_vec_add(arch: str = "gfx942", *, seed: int = 0) -> KernelSpec:
    """A tiny memory-bound element-wise kernel (two loads, one add, one store)."""
    _check_arch(arch)
    ins = (
        SynthInstruction("s_load_dword s2, s[4:5], 0x2c", 6, latency_cycles=380),
        SynthInstruction("s_load_dwordx4 s[8:11], s[4:5], 0x0", 6, latency_cycles=380),
        SynthInstruction("s_waitcnt lgkmcnt(0)", 6),
        SynthInstruction("v_mad_u32_u24 v0, s6, s2, v0", 6),
        SynthInstruction("v_cmp_gt_i32_e32 vcc, s12, v0", 7),
        SynthInstruction("s_and_saveexec_b64 s[0:1], vcc", 7),
        SynthInstruction("s_cbranch_execz", 7),  # no active lane: jump to s_endpgm (resolved below)
        SynthInstruction("v_lshlrev_b32_e32 v1, 2, v0", 8),
        SynthInstruction("global_load_dword v2, v1, s[8:9]", 8, latency_cycles=900),
        SynthInstruction("global_load_dword v3, v1, s[10:11]", 8, stall_cycles=8, latency_cycles=900),
        SynthInstruction("s_waitcnt vmcnt(0)", 8),
        SynthInstruction("v_add_f32_e32 v2, v2, v3", 8),
        SynthInstruction("global_store_dword v1, v2, s[12:13]", 8, latency_cycles=400),
        SynthInstruction("s_endpgm", 10, issue_cycles=20),
        SynthInstruction("s_code_end", None, executed=False),
    )
    branch = next(i for i, x in enumerate(ins) if x.asm.startswith("s_cbranch"))
    endpgm = next(i for i, x in enumerate(ins) if x.asm == "s_endpgm")
    ins = with_branch_immediates(ins, {branch: endpgm})
    return KernelSpec(
        name="_Z13vec_add_floatPKfS0_Pfi",
        demangled="vec_add_float(float const*, float const*, float*, int)",
        arch=arch,
        instructions=ins,
        loop=None,
        waves=WaveLayout(shader_engines=1, simds=4, slots=2, waves_per_slot=2),
        resources=KernelResources(arch_vgprs=8, accum_vgprs=0, sgprs=16, lds_bytes=0,
                                  workgroup=(256, 1, 1), grid=(1048576, 1, 1)),
        source_path=VEC_ADD_SOURCE_PATH,
        source_text=VEC_ADD_SOURCE,
        seed=seed,
        code_object_id=3,
        base_vaddr=6400,
        start_cycle=70000,
        duration_ns=9600,
    )


def demo_large(scale: int = 1, arch: str = "gfx942", *, seed: int = 0) -> KernelSpec:
    """demo_gemm grown for benchmarks: ``scale`` × 64 waves per SE slot layout, longer loop.

    scale=1 gives 4 SE × 4 SIMD × 2 slots × 2 waves = 64 waves of 32 iterations (≈ 2.4 MB of
    wave files); the volume grows linearly with ``scale`` (scale 10 ≈ 24 MB, 640 files).
    """
    if scale < 1:
        from kerneltrace.errors import InputError

        raise InputError(f"scale must be >= 1, got {scale}", "demo_large", "pass --scale 1 or more")
    return demo_gemm(arch, iterations=32, waves_per_slot=2 * scale, shader_engines=4, seed=seed)

