"""Array helpers the packet readers share."""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> list[int]:
    """The distinct values of a 1-d integer array, ascending: np.unique without its masked-array check, whose first
    call imports numpy.ma (a fifth of numpy's import time, paid by every run)."""
    if values.size == 0:
        return []
    ordered = np.sort(values, kind="stable")
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep].tolist()
