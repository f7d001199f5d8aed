"""Published before/after pairs with measured speed, and A/A re-captures, for calibrating estimates (test data).

The captures live outside the repository (``../shared/calibration`` and ``../shared/captures``,
never copied in); this module only names them and records the speed their authors measured
(vjelic/aiter-glog-fork, branch skinny_mxfp4_aggregate_load @ 1607eeb3, READMEs of
``skinny_M128/`` and ``study_aggregate_load/``; see CALIBRATION.md beside the captures). Used by
the calibration tests, ``bench/bench_calibration.py`` and ``docs/calibration.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerneltrace.model.naming import is_dispatch_dir

AITER = "aiter-glog-fork-calibration"
SKINNY = f"{AITER}/skinny_M128"
AL = f"{AITER}/study_aggregate_load/AL"


@dataclass(frozen=True)
class CalibrationPair:
    """One change with its measured speed: folders relative to the calibration root."""

    name: str
    before: str  # folder holding one ui_output_agent_*_dispatch_* dir
    after: str
    change: str  # what the authors changed (their README, shortened)
    bandwidth_before: float  # TB/s, bytes moved are equal within a shape
    bandwidth_after: float
    ttgir: str  # what the .ttgir diff shows
    addressed: str | None  # source line (file:line suffix) of the before-plan finding the change
    #                        targets; None when it is not one finding (a scheduling redesign)

    @property
    def measured_time_change(self) -> float:
        """Relative kernel-time change: time ratio = inverse bandwidth ratio."""
        return self.bandwidth_before / self.bandwidth_after - 1.0


PAIRS: tuple[CalibrationPair, ...] = (
    CalibrationPair("M128 hack0→hack1", f"{SKINNY}/att_hack0", f"{SKINNY}/att_hack1",
                    "enable ping-pong (8 waves)", 3.20, 3.68,
                    "adds amdgpu.cond_barrier on wave groups 0–3 / 4–7 around the loop, so the "
                    "two halves alternate memory and MFMA phases", None),
    CalibrationPair("M128 hack1→hack2", f"{SKINNY}/att_hack1", f"{SKINNY}/att_hack2",
                    "prefetch all ds_read", 3.68, 3.68,
                    "one rocdl.sched.barrier 0 in the loop: the LDS reads are scheduled ahead "
                    "of the MFMAs (more live registers: occupancy limit 4 → 2 waves/SIMD)",
                    "gemm_afp4wfp4.py:103"),
    CalibrationPair("M128 hack2→hack3", f"{SKINNY}/att_hack2", f"{SKINNY}/att_hack3",
                    "move buffer_load closer to async_wait", 3.68, 3.78,
                    "the ttg.async_wait (s_waitcnt vmcnt(0) of line 90) moves after the next "
                    "buffer_load issue, between two sched barriers", "gemm_afp4wfp4.py:90"),
    CalibrationPair("M128 hack3→hack5", f"{SKINNY}/att_hack3", f"{SKINNY}/att_hack5",
                    "ping-pong version 2", 3.78, 3.77,
                    "splits the waits and copies of A/SA and B/SB into two barrier phases per "
                    "iteration (33 changed lines)", None),
    CalibrationPair("AL BN64 nS2 orig→hack0", f"{AL}/BM32-BN64-BK512_nS2-nW4/att_orig",
                    f"{AL}/BM32-BN64-BK512_nS2-nW4/att_hack0",
                    "close the gap after vmcnt(0) before the next buffer_load", 2.471, 2.720,
                    "the async_wait moves down to the buffer_load_to_local issue, pointer math "
                    "is hoisted above it and the scale local_loads take its token",
                    "gemm_afp4wfp4.py:97"),
    CalibrationPair("AL BN64 nS3 orig→hack1", f"{AL}/BM32-BN64-BK512_nS3-nW4/att_orig",
                    f"{AL}/BM32-BN64-BK512_nS3-nW4/att_hack1",
                    "same idea with 3 stages (token on the scale local_loads)", 2.755, 3.090,
                    "the two scale local_loads take the async_wait token: no vmcnt(0) before "
                    "ds_read_u8", "gemm_afp4wfp4.py:89"),
    CalibrationPair("AL BN128 nS2 orig→hack2", f"{AL}/BM32-BN128-BK512_nS2-nW4/att_orig",
                    f"{AL}/BM32-BN128-BK512_nS2-nW4/att_hack2",
                    "move buffer_load close to async_wait (larger tile)", 4.0, 4.36,
                    "as the BN64 2-stage hack0, on the BN128 tile", "gemm_afp4wfp4.py:97"),
)

# Re-captures of one flash_attn_func build (identical instruction stream): no change, so any
# estimated change is noise. Paths relative to ../shared/captures.
_FA = "flydsl-kernel-profiling-lib/examples/flash_attn_func/att_viewer"
_FA_HISTORY = "flydsl-kernel-profiling-lib-history/examples/flash_attn_func/att_viewer"
AA_PAIRS: tuple[tuple[str, str], ...] = (
    (f"{_FA}/big/ui_output_agent_38430_dispatch_44",
     f"{_FA}/big/ui_output_agent_55287_dispatch_44_after_loc_fix"),
    (f"{_FA}/big/ui_output_agent_38430_dispatch_44",
     f"{_FA_HISTORY}/big/ui_output_agent_25171_dispatch_44"),
    (f"{_FA_HISTORY}/big/ui_output_agent_25171_dispatch_44",
     f"{_FA}/big/ui_output_agent_55287_dispatch_44_after_loc_fix"),
    (f"{_FA}/small/ui_output_agent_32235_dispatch_44",
     f"{_FA}/small/ui_output_agent_58550_dispatch_44_after_loc_fix"),
)


def dispatch_dir(root: Path, folder: str) -> Path:
    """The one ui_output_agent_*_dispatch_* dir under ``root/folder``."""
    found = sorted(path for path in (root / folder).iterdir() if path.is_dir() and is_dispatch_dir(path))
    if len(found) != 1:
        raise FileNotFoundError(f"expected one dispatch dir under {root / folder}, found "
                                f"{len(found)}")
    return found[0]
