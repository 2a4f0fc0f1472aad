"""Which worker of a `--workers N` run follows a connection: a hash of its two endpoints, the same for either direction,
computed once per connection (`owner`) or for a chunk's segments at once (`owners`), so that each worker drops the
other workers' segments before they reach Python."""

from __future__ import annotations

import numpy as np

MASK = (1 << 64) - 1
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's finaliser: every input bit moves every output bit


def owner(key: tuple[int, int, int, int, int], parts: int) -> int:
    """The worker of a connection key (src_hi, src_lo, dst_hi, dst_lo, sport << 16 | dport), either direction."""
    shi, slo, dhi, dlo, ports = key
    z = ((shi ^ dhi) ^ ((slo ^ dlo) << 17) ^ (((ports >> 16) ^ ports) & 0xFFFF) << 48) & MASK
    z = ((z ^ (z >> 30)) * _M1) & MASK
    z = ((z ^ (z >> 27)) * _M2) & MASK
    return (z ^ (z >> 31)) % parts


def owners(src_hi: np.ndarray, src_lo: np.ndarray, dst_hi: np.ndarray, dst_lo: np.ndarray, ports: np.ndarray,
           parts: int) -> np.ndarray:
    """`owner` of each segment of a chunk (int64 columns as frames.Segments holds them)."""
    u = np.uint64
    with np.errstate(over="ignore"):
        z = ((src_hi.astype(u) ^ dst_hi.astype(u)) ^ ((src_lo.astype(u) ^ dst_lo.astype(u)) << u(17))
             ^ (((ports.astype(u) >> u(16)) ^ ports.astype(u)) & u(0xFFFF)) << u(48))
        z = (z ^ (z >> u(30))) * u(_M1)
        z = (z ^ (z >> u(27))) * u(_M2)
        return ((z ^ (z >> u(31))) % u(parts)).astype(np.int64)
