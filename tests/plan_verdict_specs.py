"""Synthetic kernels with one known bottleneck each, for the verdict tests (SYNTHETIC numbers)."""

from __future__ import annotations

from kerneltrace.synth import KernelSpec, LoopRegion, SynthInstruction, WaveLayout
from kerneltrace.synth.spec import KernelResources, with_branch_immediates

I = SynthInstruction  # noqa: E741 (short alias keeps the instruction tables readable)
SOURCE = "/synthetic/kernels/verdicts.py"
KERNARGS = (
    I("s_load_dwordx4 s[8:11], s[0:1], 0x0", 2, latency_cycles=400),
    I("s_load_dword s12, s[0:1], 0x10", 2, latency_cycles=400),
    I("s_waitcnt lgkmcnt(0)", 2),
)
END = (I("s_endpgm", 1, issue_cycles=20), I("s_code_end", None, executed=False))


def _spec(name: str, body: tuple, *, loop: tuple[int, int, int] | None = None,
          slots: int = 1, waves_per_slot: int = 2) -> KernelSpec:
    ins = (*KERNARGS, *body, *END)
    branches = {}
    if loop is not None:
        first, last = loop[0] + len(KERNARGS), loop[1] + len(KERNARGS)
        branches[last] = first
    ins = with_branch_immediates(ins, branches) if branches else ins
    return KernelSpec(
        name=name, demangled=name, arch="gfx942", instructions=ins,
        loop=None if loop is None else LoopRegion(loop[0] + len(KERNARGS), loop[1] + len(KERNARGS),
                                                  loop[2]),
        waves=WaveLayout(shader_engines=1, simds=4, slots=slots, waves_per_slot=waves_per_slot),
        resources=KernelResources(arch_vgprs=64, accum_vgprs=64, sgprs=32, lds_bytes=16384,
                                  workgroup=(256, 1, 1), grid=(65536, 1, 1)),
        source_path=SOURCE, source_text="\n".join(f"# line {n}" for n in range(1, 60)),
    )


def mfma_bound() -> KernelSpec:
    mfma = "v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]"
    body = (
        I("global_load_dwordx4 v[4:7], v0, s[8:9]", 10, latency_cycles=300),
        I("global_load_dwordx4 v[8:11], v0, s[8:9] offset:256", 10, latency_cycles=300),
        *(I(mfma, 12, issue_cycles=32) for _ in range(12)),
        I("s_waitcnt vmcnt(0)", 11),
        I("s_cbranch_scc1", 13),
    )
    return _spec("mfma_bound_kernel", body, loop=(0, len(body) - 1, 16))


def barrier_bound() -> KernelSpec:
    body = (
        I("ds_write_b128 v1, v[4:7]", 20, latency_cycles=64),
        I("s_waitcnt lgkmcnt(0)", 20),
        I("s_barrier", 21, stall_cycles=600),
        I("ds_read_b128 v[8:11], v1", 22, latency_cycles=64),
        I("s_waitcnt lgkmcnt(0)", 22),
        I("v_add_f32_e32 v12, v8, v9", 23),
        I("s_barrier", 24, stall_cycles=500),
        I("s_cbranch_scc1", 25),
    )
    return _spec("barrier_bound_kernel", body, loop=(0, len(body) - 1, 8))


def prologue_bound() -> KernelSpec:
    body = (
        I("s_load_dwordx2 s[14:15], s[0:1], 0x18", 3, latency_cycles=900),
        I("s_load_dwordx2 s[16:17], s[0:1], 0x20", 3, latency_cycles=900),
        I("s_waitcnt lgkmcnt(0)", 3),
        I("global_load_dword v3, v0, s[14:15]", 4, latency_cycles=8),
        I("v_mov_b32_e32 v1, s14", 4),
        I("s_waitcnt vmcnt(0)", 4),
        I("v_add_u32_e32 v2, v3, v1", 4),
        I("global_store_dword v0, v2, s[8:9]", 5, latency_cycles=200),
    )
    # it reads memory (one short load): a kernel whose setup dominates, not a fill
    return _spec("prologue_bound_kernel", body)


def hazard_bound() -> KernelSpec:
    body = (
        I("v_exp_f32_e32 v4, v4", 30),
        I("s_nop 4", 30, stall_cycles=60),
        I("v_mul_f32_e32 v5, v4, v6", 31),
        I("v_exp_f32_e32 v7, v7", 30),
        I("s_nop 4", 30, stall_cycles=60),
        I("v_add_f32_e32 v8, v7, v5", 32),
        I("s_cbranch_scc1", 33),
    )
    return _spec("hazard_bound_kernel", body, loop=(0, len(body) - 1, 16))


def loads_on_decorator_line() -> KernelSpec:
    """The loads, their wait and the barrier sit on line 1 (the s_endpgm line = kernel entry)."""
    body = (
        I("v_lshlrev_b32_e32 v1, 4, v0", 1),
        I("buffer_load_dword v2, v1, s[8:11], 0 offen lds", 1, latency_cycles=900),
        I("buffer_load_dword v3, v1, s[8:11], 0 offen offset:1024 lds", 1, latency_cycles=900),
        I("s_waitcnt vmcnt(0)", 1),
        I("s_barrier", 1, stall_cycles=20),
        I("ds_read_b128 v[4:7], v1", 40, latency_cycles=64),
        I("s_waitcnt lgkmcnt(0)", 40),
        I("v_mfma_f32_32x32x8_f16 a[0:15], v[4:5], v[6:7], a[0:15]", 41, issue_cycles=32),
        I("s_cbranch_scc1", 42),
    )
    return _spec("decorator_loads_kernel", body, loop=(0, len(body) - 1, 8))


def vector_issue_bound() -> KernelSpec:
    """An MFMA loop whose matrix pipe idles behind dependent VALU work and compare/select NOPs."""
    mfma = "v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]"
    body = (
        I(mfma, 50, issue_cycles=32),
        I("v_exp_f32_e32 v4, v4", 51, stall_cycles=120),
        I("v_mul_f32_e32 v5, v4, v6", 51, stall_cycles=120),
        I("v_cmp_gt_f32_e32 vcc, s23, v5", 52),
        I("s_nop 1", 52, stall_cycles=90),
        I("v_cndmask_b32_e32 v7, 0, v5, vcc", 52),
        I("s_cbranch_scc1", 53),
    )
    return _spec("vector_issue_kernel", body, loop=(0, len(body) - 1, 16))
