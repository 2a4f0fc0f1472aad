"""Feeding captured wire bytes to a TlsSession the way the dissector will: both directions interleaved, in chunks of
random sizes (record boundaries fall anywhere)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kafkatap.dissect.tls import TlsSession


def replay(session: TlsSession, wire: Sequence[bytes | bytearray], seed: int = 0,
           max_chunk: int = 3000, close: bool = True) -> tuple[bytes, bytes]:
    """Feed both directions, interleaved at random; return the plaintext each direction yielded."""
    rng = random.Random(seed)
    got = (bytearray(), bytearray())
    pos = [0, 0]
    while pos[0] < len(wire[0]) or pos[1] < len(wire[1]):
        unfinished = [d for d in (0, 1) if pos[d] < len(wire[d])]
        direction = rng.choice(unfinished)
        size = rng.choice((1, 5, 7, rng.randrange(1, max_chunk + 1)))
        chunk = bytes(wire[direction][pos[direction]:pos[direction] + size])
        pos[direction] += len(chunk)
        for which, plaintext in session.feed(direction, chunk):
            if isinstance(plaintext, bytes):  # else a hole's size
                got[which].extend(plaintext)
    if close:
        session.close()
    return bytes(got[0]), bytes(got[1])


def balanced(session: TlsSession, wire_lengths: tuple[int, int] | None = None) -> bool:
    """Every direction's books balance, and (given the lengths fed) every byte fed was seen."""
    return all(stats.balanced for stats in session.stats) and (
        wire_lengths is None or tuple(stats.seen for stats in session.stats) == tuple(wire_lengths))
