# cython: annotation_typing=False
"""Requests waiting for their response on one connection, paired by correlation id.

A Kafka broker answers the requests of one connection in the order it received them. So when the response to request
k arrives, every older request still waiting has lost its response (in a capture gap): those are handed back at once
as unpaired instead of waiting for the end of the capture. That, and a cap, bound memory by in-flight requests.

Plain Python that setup.py also compiles (Cython's pure-Python mode, pairing.pxd): one source for both paths.
"""

from __future__ import annotations

from typing import Any

MAX_IN_FLIGHT = 1024
"""Per connection. Clients keep a handful in flight (librdkafka and the Java client 5); more means lost responses."""


class InFlight:
    """Pending requests of one connection, oldest first, keyed by correlation id (each has a send-order `seq`,
    `api_key` and `api_version`)."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.pending)

    def add(self, correlation_id: int, request: Any) -> list[Any]:
        """Track a request; returns requests pushed out (a reused correlation id, or the oldest past the cap)."""
        out = []
        old = self.pending.pop(correlation_id, None)
        if old is not None:
            out.append(old)
        self.pending[correlation_id] = request
        if len(self.pending) > MAX_IN_FLIGHT:
            out.append(self.pending.pop(next(iter(self.pending))))
        return out

    def take(self, correlation_id: int) -> tuple[Any, list[Any]]:
        """The request a response answers (None if it was not captured) and the older ones that lost theirs."""
        request = self.pending.pop(correlation_id, None)
        if request is None:
            return None, []
        if not self.pending or self.pending[next(iter(self.pending))].seq > request.seq:
            return request, []  # the usual case: it answers the oldest request
        skipped = []
        for key in list(self.pending):
            if self.pending[key].seq > request.seq:
                break
            skipped.append(self.pending.pop(key))
        return request, skipped

    def oldest(self, n: int = 16) -> dict[int, tuple[int, int]]:
        """correlation_id -> (api_key, api_version) of the n oldest pending requests: the responses that can come
        next."""
        out = {}
        for key, request in self.pending.items():
            out[key] = (request.api_key, request.api_version)
            if len(out) == n:
                break
        return out

    def drain(self) -> list[Any]:
        """Every pending request, oldest first (the connection closed or the capture ended)."""
        out = list(self.pending.values())
        self.pending.clear()
        return out
