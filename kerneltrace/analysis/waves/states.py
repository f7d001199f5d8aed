"""Wave states, durations and spread: the `states`, `per_wave`, `timing` and extreme-wave fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

EXTREME_WAVES = 3  # longest / shortest waves listed
STATE_KEYS = ("idle", "exec", "wait", "stall")  # timeline states 1..4


def percentile(values: np.ndarray, q: float) -> float:
    """`np.percentile(values, q)` (its default, linear method) by the same float operations, in
    the same order, without its np.unique call: that checks for masked arrays, which imports
    numpy.ma (~8 ms of every --waves run). `values`: a non-empty 1-D int or float array."""
    import numpy as np

    ordered = np.sort(values)
    last = len(ordered) - 1
    if ordered.dtype.kind == "f" and np.isnan(ordered[last]):  # NaNs sort last
        return float(ordered[last])
    virtual = last * (np.float64(q) / 100)
    below = np.floor(virtual)
    if virtual >= last:
        return float(ordered[last])
    low, high = ordered[int(below)], ordered[int(below) + 1]
    gamma = virtual - below
    step = high - low
    return float(high - step * (1 - gamma) if gamma >= 0.5 else low + step * gamma)


def distribution(values: np.ndarray) -> dict[str, float | int | None]:
    """min / p50 / p90 / max / mean of the values, rounded (all None when empty)."""
    if not len(values):
        return {"min": None, "p50": None, "p90": None, "max": None, "mean": None}
    return {"min": round(float(values.min()), 4), "p50": round(percentile(values, 50), 4),
            "p90": round(percentile(values, 90), 4),
            "max": round(float(values.max()), 4), "mean": round(float(values.mean()), 4)}


def state_summary(per_wave: list[tuple]) -> dict[str, Any]:
    """The state, per-wave distribution, timing and longest/shortest-wave fields of `waves`.

    `per_wave`: one record per wave, (file name, se, simd, slot, begin, end, instructions,
    *state cycles in STATE_KEYS order), as built by accumulate.add_group.
    """
    import numpy as np

    if not per_wave:
        return {"states": {key: None for key in STATE_KEYS}, "state_shares": None,
                "per_wave": None, "timing": None, "longest_waves": [], "shortest_waves": []}
    table = np.array([record[4:] for record in per_wave], dtype=np.int64)
    begin, end, _, *state_columns = table.T
    state_sums = {key: int(column.sum()) for key, column in zip(STATE_KEYS, state_columns, strict=True)}
    all_states = sum(state_sums.values())
    per_wave_total = np.maximum(sum(state_columns), 1)
    durations = end - begin
    order = np.argsort(durations, kind="stable")

    def describe(i: int) -> dict[str, Any]:
        name, se, simd, slot, wave_begin, wave_end, insts, *states = per_wave[i]
        return {"file": name, "se": se, "simd": simd, "slot": slot, "begin": wave_begin,
                "end": wave_end, "duration": wave_end - wave_begin, "instructions": insts,
                "states": dict(zip(STATE_KEYS, states, strict=True))}

    return {
        "states": state_sums,
        "state_shares": ({key: round(value / all_states, 4) for key, value in state_sums.items()}
                         if all_states else None),
        "per_wave": {
            "duration": distribution(durations),
            **{f"{key}_share": distribution(column / per_wave_total)
               for key, column in zip(STATE_KEYS, state_columns, strict=True)},
        },
        "timing": {
            "first_begin": int(begin.min()), "last_end": int(end.max()),
            "span_cycles": int(end.max() - begin.min()),
            "begin_spread": int(begin.max() - begin.min()),
            "end_spread": int(end.max() - end.min()),
            # how long the slowest wave keeps the CU busy after the median wave finished
            "tail_cycles": int(end.max() - np.float64(percentile(end, 50))),
        },
        "longest_waves": [describe(int(i)) for i in order[::-1][:EXTREME_WAVES]],
        "shortest_waves": [describe(int(i)) for i in order[:EXTREME_WAVES]],
    }
