"""Small numpy helpers shared by the whole-group wave analyses."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique of a 1-D integer array without its overhead (nor its numpy.ma import)."""
    import numpy as np

    if not len(values):
        return values
    ordered = np.sort(values)
    keep = np.empty(len(ordered), bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
