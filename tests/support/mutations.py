"""Random damage to bytes, shared by the fuzz test and the parity test."""

from __future__ import annotations

import random


def mutate(data: bytes, rnd: random.Random, keep: int) -> bytes:
    """One random damage after the first `keep` bytes: flips, a cut, a repeat, noise, or a truncation."""
    buf = bytearray(data)
    if len(buf) <= keep + 8:
        return bytes(buf)
    kind = rnd.randrange(5)
    a = rnd.randrange(keep, len(buf))
    b = min(len(buf), a + rnd.randrange(1, 2000))
    if kind == 0:
        for _ in range(rnd.randrange(1, 20)):
            buf[rnd.randrange(keep, len(buf))] ^= 1 << rnd.randrange(8)
    elif kind == 1:
        del buf[a:b]
    elif kind == 2:
        buf[a:a] = buf[a:b]
    elif kind == 3:
        buf[a:b] = rnd.randbytes(b - a)
    else:
        del buf[a:]
    return bytes(buf)
