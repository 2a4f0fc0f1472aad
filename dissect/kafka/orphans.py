# cython: annotation_typing=False
"""Responses whose request has not been seen, held per connection while it may still come.

The reassembler may hold a request back behind a hole in the client's direction while the broker's answer to it has
already arrived: the response waits here for its request, about as long as the reassembler holds bytes back. Bounded
like `pairing.InFlight`; the oldest are let go, to be reported as unpaired.

Plain Python that setup.py also compiles (Cython's pure-Python mode, orphans.pxd): one source for both paths.
"""

from __future__ import annotations

from kafkatap.dissect.streams.reassembly import Where

MAX_ORPHANS = 64
MAX_ORPHAN_BYTES = 16 << 20
"""Responses held per connection while their request may still come (as much as the reassembler holds back)."""

Orphan = tuple[Where, int, bytes]
"""(the packet carrying its first byte, stream offset, payload) of a response frame."""


class Orphans:
    """Held responses of one connection, oldest first, keyed by correlation id."""

    __slots__ = ("held", "nbytes")

    def __init__(self) -> None:
        self.held: dict[int, Orphan] = {}
        self.nbytes = 0

    def hold(self, correlation_id: int, orphan: Orphan) -> list[tuple[int, Orphan]]:
        """Keep a response; returns the ones let go (correlation id, orphan): an older one with the same
        correlation id, then the oldest past the bounds."""
        out = []
        old = self.held.pop(correlation_id, None)
        if old is not None:
            self.nbytes -= len(old[2])
            out.append((correlation_id, old))
        self.held[correlation_id] = orphan
        self.nbytes += len(orphan[2])
        while len(self.held) > MAX_ORPHANS or self.nbytes > MAX_ORPHAN_BYTES:
            key = next(iter(self.held))
            out.append((key, self._pop(key)))
        return out

    def take(self, correlation_id: int) -> Orphan | None:
        """The held response to a request that just arrived, if any."""
        if not self.held:
            return None
        orphan = self.held.pop(correlation_id, None)
        if orphan is not None:
            self.nbytes -= len(orphan[2])
        return orphan

    def drain(self) -> list[tuple[int, Orphan]]:
        """Every held response, oldest first (the connection closed or the capture ended)."""
        return [(key, self._pop(key)) for key in list(self.held)]

    def _pop(self, correlation_id: int) -> Orphan:
        orphan = self.held.pop(correlation_id)
        self.nbytes -= len(orphan[2])
        return orphan
