# cython: annotation_typing=False
"""Bytes a framer skips, booked and reported: each skip is booked in the byte account by reason, and a run of skips
for one reason over contiguous stream bytes becomes a single anomaly row at the packet where the run began (a resync
over a megabyte is one row, not one per segment).

Plain Python that setup.py also compiles (Cython's pure-Python mode, skips.pxd): one source for both paths."""

from __future__ import annotations

from kafkatap.dissect.anomalies import KINDS
from kafkatap.dissect.kafka.account import Account
from kafkatap.dissect.kafka.messages import Messages
from kafkatap.dissect.streams.reassembly import Where


class Skips:
    """One direction of one connection; `on_skip` is its framer's `framing.SkipHandler`."""

    __slots__ = ("out", "conn_id", "account", "direction", "run")

    def __init__(self, out: Messages, conn_id: str, account: Account, direction: int) -> None:
        self.out = out
        self.conn_id = conn_id
        self.account = account
        self.direction = direction
        self.run: tuple[str, int, int, Where] | None = None  # (reason, offset, nbytes, where) being coalesced

    def on_skip(self, reason: str, nbytes: int, offset: int, where: Where) -> None:
        if reason == "bad_length":
            self.flush()
            self.out.anomaly("bad_length", KINDS["bad_length"].meaning, where, self.conn_id,
                             self.direction, offset, 0)
            return
        self.account.skipped(self.direction, reason, nbytes)
        run = self.run
        if run is not None and run[0] == reason and run[1] + run[2] == offset:
            self.run = (reason, run[1], run[2] + nbytes, run[3])
            return
        self.flush()
        self.run = (reason, offset, nbytes, where)

    def flush(self) -> None:
        """Report the run being coalesced, if any: call before anything else of this direction is reported."""
        run = self.run
        if run is None:
            return
        self.run = None
        reason, offset, nbytes, where = run
        self.out.anomaly(reason, KINDS[reason].meaning, where, self.conn_id, self.direction, offset, nbytes)
