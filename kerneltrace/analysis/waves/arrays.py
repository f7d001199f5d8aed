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
    return unique_of_sorted(np.sort(values))


def unique_of_sorted(ordered: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted 1-D array, in order."""
    import numpy as np

    if not len(ordered):
        return ordered
    keep = np.empty(len(ordered), bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
