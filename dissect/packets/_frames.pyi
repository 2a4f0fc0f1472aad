"""Stub of the compiled twin of frames.parse_frames (_frames.pyx)."""

import numpy as np

def parse_frames(buf: bytes, off: np.ndarray, caplen: np.ndarray, origlen: np.ndarray, ts_us: np.ndarray,
                 linktype: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...],
                                                np.ndarray]: ...
