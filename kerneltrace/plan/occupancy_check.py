"""The occupancy model against what the trace observed, and whether "more waves" has headroom.

The model (analysis/occupancy.py) says how many waves a SIMD could hold and which resource caps
it; the wave files (`waves.residency`) say how many it did hold at once. Observed below the
computed limit means one of:

* `grid`: the kernel-trace grid supplies no more waves per SIMD than were seen;
* `other-resource`: the traced CU was refilled (a wave began after another of its waves ended),
  so it held all it could at its peak: a resource the model did not evaluate (LDS or workgroup
  slots without a kernel-trace row) or did not model caps it at the observed count;
* `unexplained`: neither the grid nor a refill tells (no kernel-trace row, no refill).

"More waves per SIMD (occupancy)" is advice only with headroom shown (`headroom`): every limiter
evaluated, below the hardware cap, the grid supplying more waves per SIMD than the limit, and the
observed residency reaching the limit. Without it the verdict's "what helps" drops the advice
and says why under "what does not" (`without_occupancy_advice`).
"""

from __future__ import annotations

from dataclasses import replace

from kerneltrace.plan.verdict import Bottleneck, doc_structure


def observed(doc: dict) -> dict | None:
    """{computed, observed, status, limiter, text} when the wave files show the residency."""
    occ = doc.get("occupancy") or {}
    computed = occ.get("waves_per_simd")
    residency = (doc.get("waves") or {}).get("residency") or {}
    seen = residency.get("max_waves_per_simd")
    if not isinstance(computed, int) or not isinstance(seen, int) or seen <= 0:
        return None
    launch = doc_structure(doc).get("launch") or {}
    grid = launch.get("waves_per_simd_grid")
    unknown = [key for key, value in (occ.get("limits") or {}).items()
               if value is None and key != "hardware"]
    limiter = occ.get("limited_by")
    if seen >= computed:
        status, text = "reached", (f"the traced CUs held {seen} wave(s)/SIMD at once: the "
                                   f"computed limit ({limiter}) is reached")
    elif isinstance(grid, int | float) and grid <= seen:
        status, text = "grid", (f"the traced CUs held {seen} wave(s)/SIMD at once, below the "
                                f"computed {computed}: the grid supplies {grid:g} per SIMD")
    elif residency.get("refilled"):
        other = (f"likely {' or '.join(u.upper() for u in unknown)}, not known in this capture"
                 if unknown else "a resource the model does not see")
        status, text = "other-resource", (
            f"the traced CUs held at most {seen} wave(s)/SIMD at once while more waited (a CU "
            f"started waves after others ended), below the computed {computed} ({limiter}): "
            f"the real limit is {seen}, set by another resource ({other})")
    else:
        status, text = "unexplained", (
            f"the traced CUs held at most {seen} wave(s)/SIMD at once, below the computed "
            f"{computed} ({limiter}); neither the grid ("
            + (f"{grid:g} waves/SIMD from the kernel-trace row" if isinstance(grid, int | float)
               else "no kernel-trace row")
            + ") nor a refill of the CU tells whether the grid or another resource caps it")
    return {"computed": computed, "observed": seen, "status": status, "text": text}


def headroom(doc: dict) -> tuple[bool, str]:
    """(True, "") when one more wave per SIMD is shown possible, else (False, why not)."""
    occ = doc.get("occupancy") or {}
    computed = occ.get("waves_per_simd")
    if not isinstance(computed, int):
        return False, "the occupancy limit is unknown"
    seen = observed(doc)
    if seen is not None and seen["status"] != "reached":
        return False, seen["text"]  # what the trace shows beats what the model cannot tell
    unknown = [key for key, value in (occ.get("limits") or {}).items()
               if value is None and key != "hardware"]
    if unknown:
        return False, (f"the occupancy limit is not known ({', '.join(u.upper() for u in unknown)} "
                       "not evaluated: no kernel-trace row)")
    hardware = (occ.get("limits") or {}).get("hardware")
    if isinstance(hardware, int) and computed >= hardware:
        return False, f"{computed} waves/SIMD is the hardware maximum"
    grid = (doc_structure(doc).get("launch") or {}).get("waves_per_simd_grid")
    if not isinstance(grid, int | float):
        return False, "whether the grid supplies more waves per SIMD is unknown (no kernel-trace row)"
    if grid <= computed:
        return False, f"the grid supplies {grid:g} waves per SIMD, no more than the CU holds"
    return True, ""


def without_occupancy_advice(verdict: Bottleneck, doc: dict) -> Bottleneck:
    """The verdict without "more waves (occupancy)" in what helps unless headroom is shown."""
    advice = [item for item in verdict.helps if item.startswith("more waves")]
    if not advice:
        return verdict
    shown, why = headroom(doc)
    if shown:
        return verdict
    return replace(verdict, helps=[item for item in verdict.helps if item not in advice],
                   does_not_help=[*verdict.does_not_help, f"more waves per SIMD (occupancy): {why}"])
