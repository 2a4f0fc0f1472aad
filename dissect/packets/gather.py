"""Integer reads at many offsets of one byte buffer at once.

The packet layers parse whole chunks of frames with numpy instead of one `struct` call per packet; these helpers
gather the bytes of one field for every frame. Offsets past the buffer are clamped to its last byte (never an
IndexError), so callers compute on every frame and mask out the frames whose headers were too short.
"""

from __future__ import annotations

import numpy as np


def _at(data: np.ndarray, idx: np.ndarray, k: int) -> np.ndarray:
    return data[np.minimum(idx + k, len(data) - 1)]  # offsets are never negative


def u8(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return _at(data, idx, 0).astype(np.int64)


def be16(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return (_at(data, idx, 0).astype(np.int64) << 8) | _at(data, idx, 1)


def le16(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return (_at(data, idx, 1).astype(np.int64) << 8) | _at(data, idx, 0)


def be32(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return (be16(data, idx) << 16) | be16(data, idx + 2)


def le32(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return (le16(data, idx + 2) << 16) | le16(data, idx)


def be64(data: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Big-endian 64-bit value as int64 (the bit pattern: values >= 2**63 come out negative)."""
    return ((be32(data, idx).astype(np.uint64) << np.uint64(32)) | be32(data, idx + 4).astype(np.uint64)).view(np.int64)
