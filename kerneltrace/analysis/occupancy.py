"""Occupancy model: waves per SIMD and its limiter from an ArchSpec, register usage and dispatch
metadata (the hotspot document's "occupancy" object; model documented in
docs/isa-and-occupancy.md)."""

from __future__ import annotations

from collections.abc import Iterable

from kerneltrace.arch.dispatch_meta import DispatchMeta
from kerneltrace.arch.table import ArchSpec, get_arch
from kerneltrace.isa.registers import RegisterUsage
from kerneltrace.records import record

LIMITERS: tuple[str, ...] = ("vgpr", "sgpr", "lds", "workgroup")

# Targets whose rocprofv3 VGPR_Count/Accum_VGPR_Count are exact: the SDK derives arch VGPRs from
# accum_offset only for gfx90a and gfx94x (docs/rocprof-outputs.md §6.1).
_SDK_EXACT_VGPR_TARGETS = ("gfx90a", "gfx94")


def _align_up(value: int, granule: int) -> int:
    return -(-value // granule) * granule if granule > 1 else value


def _align_down(value: int, granule: int) -> int:
    return (value // granule) * granule if granule > 1 else value


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


@record(frozen=True)
class _Vgprs:
    arch: int | None
    agprs: int | None
    accum_offset: int | None
    allocated: int | None  # combined allocation, rounded to the granule
    source: str


def _csv_vgpr_rule(arch: ArchSpec) -> str:
    if arch.name.startswith(_SDK_EXACT_VGPR_TARGETS):
        return "exact"
    if arch.unified_agpr:
        return "halved"  # gfx950: SDK reports (granulated+1)*4 = half the allocation, accum 0
    return "unverified"


def _isa_combined(arch: ArchSpec, regs: RegisterUsage, granule: int) -> tuple[int, int]:
    """(accum_offset, combined allocation) implied by the registers seen in the ISA."""
    if arch.unified_agpr and regs.agprs > 0:
        accum_offset = _align_up(max(regs.arch_vgprs, 1), arch.accum_offset_granule)
        if regs.accum_offset is not None:
            accum_offset = max(accum_offset, regs.accum_offset)
        return accum_offset, _align_up(accum_offset + regs.agprs, granule)
    return _align_up(max(regs.arch_vgprs, 1), arch.accum_offset_granule), _align_up(
        max(regs.arch_vgprs, 1), granule)


def _vgprs(arch: ArchSpec, regs: RegisterUsage, meta: DispatchMeta | None, granule: int,
           notes: list[str]) -> _Vgprs:
    have_isa = regs.source != "none" and (regs.arch_vgprs > 0 or regs.agprs > 0)
    isa_offset, isa_alloc = _isa_combined(arch, regs, granule) if have_isa else (None, None)
    csv_vgpr = meta.vgpr_count if meta else None
    csv_accum = meta.accum_vgpr_count if meta else None
    csv_alloc: int | None = None
    csv_label = ""
    if csv_vgpr:
        rule = _csv_vgpr_rule(arch)
        if rule == "exact":
            csv_alloc = _align_up(csv_vgpr + (csv_accum or 0), granule)
            csv_label = "kernel_trace VGPR_Count + Accum_VGPR_Count"
        elif rule == "halved":
            csv_alloc = _align_up(2 * csv_vgpr, granule)
            csv_label = (f"kernel_trace VGPR_Count x2 ({csv_vgpr} -> {2 * csv_vgpr}: rocprofv3 "
                         f"reports half the allocation on {arch.name}, Accum_VGPR_Count 0)")
        else:
            csv_alloc = _align_up(csv_vgpr + (csv_accum or 0), granule)
            csv_label = "kernel_trace VGPR_Count (SDK formula not verified for this target)"
    arch_count = regs.arch_vgprs if have_isa else None
    agprs = regs.agprs if have_isa else None
    if regs.source == "metadata":
        notes.append("VGPRs from compiler resource metadata (authoritative)")
        return _Vgprs(arch_count, agprs, isa_offset, isa_alloc, "metadata")
    if csv_alloc is not None and isa_alloc is not None:
        if csv_alloc >= isa_alloc:
            if arch.unified_agpr and _csv_vgpr_rule(arch) == "exact" and csv_accum:
                arch_count, agprs = max(arch_count or 0, csv_vgpr), max(agprs or 0, csv_accum)
            return _Vgprs(arch_count, agprs, isa_offset, csv_alloc,
                          f"{csv_label}; ISA scan ({isa_alloc}) agrees as a lower bound")
        notes.append(f"kernel_trace VGPRs ({csv_alloc}) below the registers seen in the ISA "
                     f"({isa_alloc}): using the ISA scan")
        return _Vgprs(arch_count, agprs, isa_offset, isa_alloc,
                      f"ISA scan (max index +1; {csv_label} is lower)")
    if csv_alloc is not None:
        if arch.unified_agpr and _csv_vgpr_rule(arch) == "exact":
            arch_count, agprs = csv_vgpr, csv_accum or 0
        return _Vgprs(arch_count, agprs, None, csv_alloc, csv_label)
    if isa_alloc is not None:
        return _Vgprs(arch_count, agprs, isa_offset, isa_alloc,
                      "ISA scan (max index + 1, a lower bound; no kernel_trace row)")
    return _Vgprs(None, None, None, None, "unknown: no ISA registers and no kernel_trace row")


def _waves_from_workgroups(workgroups: int, waves_per_wg: int, arch: ArchSpec) -> int:
    """Waves per SIMD when `workgroups` fit on one CU (floor of the average, ≥ 1 if any fits)."""
    if workgroups <= 0:
        return 0
    return min(arch.max_waves_per_simd, max(1, workgroups * waves_per_wg // arch.simds_per_cu))


def _workgroups_for(target_waves: int, waves_per_wg: int, arch: ArchSpec) -> int:
    """Workgroups per CU needed for `target_waves` waves per SIMD."""
    return _ceil_div(target_waves * arch.simds_per_cu, waves_per_wg)


@record(frozen=True)
class _Limit:
    """One limiter's answer: waves per SIMD it allows (None: not evaluated) and why."""

    waves: int | None
    source: str


def _unknown_arch(regs: RegisterUsage, meta: DispatchMeta | None, candidates: Iterable[str],
                  wave_size: int | None) -> dict:
    """The occupancy object without an arch: nulls, the reason, and one entry per candidate."""
    per_candidate = {}
    for name in candidates:
        spec = get_arch(name)
        if spec is not None:
            result = compute_occupancy(spec, regs, meta, wave_size=wave_size)
            per_candidate[spec.name] = {
                "waves_per_simd": result["waves_per_simd"],
                "limited_by": result["limited_by"],
                "limits": result["limits"],
            }
    return {
        "arch": None,
        "waves_per_simd": None,
        "limited_by": None,
        "limits": {key: None for key in (*LIMITERS, "hardware")},
        "registers": regs.to_dict(),
        "lds": None,
        "workgroup": None,
        "next_level": None,
        "sources": {"reason": "architecture unknown: occupancy depends on the arch "
                              "(pass --arch or provide agent_info.csv)"},
        "per_candidate": per_candidate,
    }


def _vgpr_limit(arch: ArchSpec, regs: RegisterUsage, meta: DispatchMeta | None, wave: int,
                pool: int | None, granule: int | None, registers: dict, notes: list[str]) -> _Limit:
    """VGPRs (arch + AGPRs, one pool per lane): fills the register fields of `registers`."""
    hardware = arch.max_waves_per_simd
    if pool is None or granule is None:
        return _Limit(None, f"VGPR file size of {arch.name} (wave{wave}) not known")
    vgprs = _vgprs(arch, regs, meta, granule, notes)
    registers.update(arch_vgprs=vgprs.arch, agprs=vgprs.agprs, accum_offset=vgprs.accum_offset,
                     combined_vgprs=vgprs.allocated)
    if vgprs.allocated is None:
        return _Limit(None, vgprs.source)
    return _Limit(min(hardware, pool // vgprs.allocated) if vgprs.allocated else hardware,
                  vgprs.source)


def _sgpr_limit(arch: ArchSpec, regs: RegisterUsage, meta: DispatchMeta | None,
                registers: dict) -> _Limit:
    """SGPRs (gfx9 only; gfx10+ gives every wave a fixed SGPR set): fills `registers`' SGPRs."""
    hardware = arch.max_waves_per_simd
    if arch.sgpr_budget is None or arch.sgpr_granule is None:
        return _Limit(hardware, f"SGPRs do not limit occupancy on {arch.family} (fixed per wave)")
    csv_sgprs = meta.sgpr_count if meta and meta.sgpr_count else None
    isa_sgprs = None
    if regs.source != "none" and regs.sgprs > 0:
        isa_sgprs = _align_up(regs.sgprs + arch.sgpr_extra, arch.sgpr_granule)
    if csv_sgprs is not None:
        allocated = _align_up(max(csv_sgprs, isa_sgprs or 0), arch.sgpr_granule)
        source = "kernel_trace SGPR_Count (descriptor, includes VCC/FLAT_SCRATCH)"
        if isa_sgprs and isa_sgprs > csv_sgprs:
            source = f"ISA scan + {arch.sgpr_extra} reserved (above SGPR_Count)"
    elif isa_sgprs is not None:
        allocated = isa_sgprs
        source = (f"ISA scan + {arch.sgpr_extra} reserved SGPRs (lower bound; "
                  "no kernel_trace row)")
    else:
        allocated = None
        source = "unknown: no SGPR seen and no kernel_trace row"
    registers["sgprs"] = regs.sgprs if regs.source != "none" else None
    registers["sgprs_allocated"] = allocated
    return _Limit(min(hardware, arch.sgpr_budget // allocated) if allocated else None, source)


def _lds_limit(arch: ArchSpec, lds_bytes: int | None, waves_per_wg: int | None, lds: dict,
               notes: list[str]) -> _Limit:
    """LDS per workgroup against the CU's LDS: fills the allocation fields of `lds`."""
    if lds_bytes is None:
        return _Limit(None, "unknown: no kernel_trace row (LDS_Block_Size / Group_Segment_Size)")
    if lds_bytes == 0:
        return _Limit(arch.max_waves_per_simd, "kernel_trace: no LDS used")
    if waves_per_wg is None:
        return _Limit(None, "unknown: workgroup size missing")
    allocated = _align_up(lds_bytes, arch.lds_granule)
    wgs = arch.lds_bytes_per_cu // allocated
    lds.update(allocated=allocated, workgroups_per_cu=wgs)
    if allocated > arch.lds_max_per_workgroup:
        notes.append(f"LDS per workgroup {allocated} B exceeds the {arch.name} limit "
                     f"{arch.lds_max_per_workgroup} B")
    return _Limit(_waves_from_workgroups(wgs, waves_per_wg, arch),
                  f"kernel_trace LDS {lds_bytes} B/workgroup -> {allocated} B allocated "
                  f"({arch.lds_granule} B granule), {arch.lds_bytes_per_cu} B per "
                  f"{arch.cu_label}")


def _workgroup_limit(arch: ArchSpec, waves_per_wg: int | None, workgroup: dict) -> _Limit:
    """Workgroup slots and barriers per CU: fills `workgroup`'s workgroups per CU."""
    if waves_per_wg is None:
        return _Limit(None, "unknown: workgroup size missing")
    if waves_per_wg > arch.max_waves_per_cu:
        return _Limit(0, f"{waves_per_wg} waves per workgroup exceed {arch.max_waves_per_cu}"
                         f" waves per {arch.cu_label}")
    if waves_per_wg == 1:
        wgs = arch.max_workgroups_per_cu
        why = "single-wave workgroups need no barrier"
    else:
        wgs = min(arch.max_waves_per_cu // waves_per_wg, arch.max_barriers_per_cu)
        why = (f"min({arch.max_waves_per_cu} waves / {waves_per_wg} per workgroup, "
               f"{arch.max_barriers_per_cu} barriers) per {arch.cu_label}")
    workgroup["workgroups_per_cu"] = wgs
    return _Limit(_waves_from_workgroups(wgs, waves_per_wg, arch), f"{wgs} workgroups: {why}")


def _limiter(limits: dict[str, int | None], hardware: int) -> tuple[int | None, str | None,
                                                                     list[str], list[str]]:
    """(waves per SIMD, limiter, tied limiters, limiters not evaluated) from the limits."""
    known = {key: value for key, value in limits.items() if key in LIMITERS and value is not None}
    unknown = [key for key in LIMITERS if limits.get(key) is None]
    if not known:
        return None, None, [], unknown
    waves = min(min(known.values()), hardware)
    tied = [key for key in LIMITERS if known.get(key) == waves and waves < hardware]
    return waves, tied[0] if tied else "none", tied, unknown


def compute_occupancy(
    arch: ArchSpec | None,
    regs: RegisterUsage,
    meta: DispatchMeta | None,
    *,
    candidates: Iterable[str] = (),
    wave_size: int | None = None,
) -> dict:
    """The hotspot document's "occupancy" object (see docs/isa-and-occupancy.md).

    With `arch` None the values are null with a reason; `candidates` (arch names) then adds a
    "per_candidate" map computed for each candidate in the arch table. Otherwise each limiter
    (VGPR, SGPR, LDS, workgroup slots) gives the waves per SIMD it allows; the lowest decides.
    """
    if arch is None:
        return _unknown_arch(regs, meta, candidates, wave_size)
    notes: list[str] = []
    wave = wave_size or arch.wave_size
    pool, granule = arch.vgpr_allocation(wave)
    hardware = arch.max_waves_per_simd
    registers: dict = {"arch_vgprs": None, "agprs": None, "accum_offset": None,
                       "combined_vgprs": None, "vgpr_pool": pool, "vgpr_granule": granule,
                       "sgprs": None, "sgprs_allocated": None, "sgpr_budget": arch.sgpr_budget,
                       "sgpr_granule": arch.sgpr_granule, "uses_vcc": regs.uses_vcc,
                       "vgpr_form_mfma": regs.vgpr_form_mfma}
    wg_size = meta.workgroup_size if meta and meta.workgroup_size else None
    waves_per_wg = _ceil_div(wg_size, wave) if wg_size else None
    workgroup: dict = {"size": wg_size, "waves_per_workgroup": waves_per_wg,
                       "workgroups_per_cu": None}
    lds_bytes = meta.lds_bytes if meta else None
    lds: dict = {"bytes_per_workgroup": lds_bytes, "allocated": None,
                 "per_cu": arch.lds_bytes_per_cu, "granule": arch.lds_granule,
                 "workgroups_per_cu": None}
    steps = {
        "vgpr": _vgpr_limit(arch, regs, meta, wave, pool, granule, registers, notes),
        "sgpr": _sgpr_limit(arch, regs, meta, registers),
        "lds": _lds_limit(arch, lds_bytes, waves_per_wg, lds, notes),
        "workgroup": _workgroup_limit(arch, waves_per_wg, workgroup),
        "hardware": _Limit(hardware, f"{arch.name}: {hardware} waves per SIMD"),
    }
    limits: dict[str, int | None] = {key: step.waves for key, step in steps.items()}
    sources: dict[str, str] = {key: step.source for key, step in steps.items()}
    if meta and meta.scratch_bytes:
        notes.append(f"kernel uses scratch ({meta.scratch_bytes} B): register spills or stack")
    waves, limited_by, tied, unknown = _limiter(limits, hardware)
    if unknown:
        notes.append("not evaluated (missing data): " + ", ".join(unknown) +
                     "; waves_per_simd is an upper bound")
    sources["notes"] = "; ".join(notes) if notes else ""

    return {
        "arch": arch.name,
        "wave_size": wave,
        "waves_per_simd": waves,
        "limited_by": limited_by,
        "tied_limiters": tied,
        "limits": limits,
        "registers": registers,
        "lds": lds,
        "workgroup": workgroup,
        "next_level": _next_level(arch, waves, tied, registers, lds, workgroup, pool, granule),
        "sources": sources,
        "upper_bound": bool(unknown),
    }


def _next_level(arch: ArchSpec, waves: int | None, tied: list[str], registers: dict, lds: dict,
                workgroup: dict, pool: int | None, granule: int | None) -> dict | None:
    """What must be saved for one more wave per SIMD, per limiter, rounded to the granule."""
    if waves is None or not tied:
        return None
    target = waves + 1
    needs: list[dict] = []
    for limiter in tied:
        if limiter == "vgpr" and pool and granule and registers["combined_vgprs"]:
            limit = _align_down(pool // target, granule)
            current = registers["combined_vgprs"]
            needs.append({
                "limiter": "vgpr", "current": current, "target_max": limit,
                "save": current - limit,
                "text": (f"reduce combined VGPRs (arch + AGPR) from {current} to <= {limit} "
                         f"({granule}-register granule)"),
                "knob": ("__launch_bounds__(threads, min_waves) / amdgpu_waves_per_eu(" +
                         str(target) + ") or fewer live values; never force maxnreg "
                         "(spills MFMA operands)"),
            })
        elif limiter == "sgpr" and arch.sgpr_budget and arch.sgpr_granule:
            limit = _align_down(arch.sgpr_budget // target, arch.sgpr_granule)
            current = registers["sgprs_allocated"]
            needs.append({
                "limiter": "sgpr", "current": current, "target_max": limit,
                "save": current - limit if current else None,
                "text": (f"reduce allocated SGPRs from {current} to <= {limit} "
                         f"(incl. {arch.sgpr_extra} reserved; {arch.sgpr_granule}-SGPR granule)"),
                "knob": "fewer uniform values kept in SGPRs; amdgpu_waves_per_eu(" + str(target) + ")",
            })
        elif limiter == "lds" and lds.get("allocated") and workgroup.get("waves_per_workgroup"):
            wgs = _workgroups_for(target, workgroup["waves_per_workgroup"], arch)
            limit = _align_down(arch.lds_bytes_per_cu // wgs, arch.lds_granule)
            current = lds["allocated"]
            needs.append({
                "limiter": "lds", "current": current, "target_max": limit,
                "save": current - limit,
                "text": (f"reduce LDS per workgroup from {current} B to <= {limit} B "
                         f"({wgs} workgroups per {arch.cu_label}, {arch.lds_granule} B granule)"),
                "knob": "smaller tiles, fewer LDS stages, or reuse buffers",
            })
        elif limiter == "workgroup":
            needs.append({
                "limiter": "workgroup", "current": workgroup.get("waves_per_workgroup"),
                "target_max": None, "save": None,
                "text": (f"workgroup slots/barriers limit {arch.cu_label} residency: use "
                         "workgroups whose wave count divides the per-CU wave budget"),
                "knob": "workgroup size",
            })
    return {"waves_per_simd": target, "needs": needs}
