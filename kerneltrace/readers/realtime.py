"""The shader clock a capture measured: realtime.json (gfx clock against the realtime counter, per SE)."""

from __future__ import annotations

from pathlib import Path

from kerneltrace.readers.regular import optional_json

PLAUSIBLE_MHZ = (50.0, 10_000.0)  # a measured shader clock outside this is a broken realtime.json


def realtime_mhz(dispatch_dir: Path) -> float | None:
    """The shader clock measured in realtime.json (mean over SEs), or None."""
    document, problem = optional_json(Path(dispatch_dir) / "realtime.json", "realtime.json")
    if problem or not isinstance(document, dict):
        return None
    metadata = document.get("metadata")
    frequency = metadata.get("frequency") if isinstance(metadata, dict) else None
    if isinstance(frequency, bool) or not isinstance(frequency, int | float) or frequency <= 0:
        return None
    rates = []
    for key, pairs in document.items():
        if not key.startswith("SE") or not isinstance(pairs, list) or len(pairs) < 2:
            continue
        try:
            (g0, r0), (g1, r1) = pairs[0][:2], pairs[-1][:2]
            rate = (g1 - g0) / ((r1 - r0) / frequency) / 1e6
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if PLAUSIBLE_MHZ[0] <= rate <= PLAUSIBLE_MHZ[1]:
            rates.append(rate)
    return round(sum(rates) / len(rates), 3) if rates else None
