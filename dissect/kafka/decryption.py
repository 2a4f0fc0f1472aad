"""Kafka inside TLS: a TLS connection on a Kafka port decrypted with a key log (`--tls-keylog`), so that its
application data is framed, paired and written exactly as a plaintext connection's.

Such a connection keeps two byte accounts: its TLS session's over the wire bytes (records decrypted, TLS overhead,
records not decrypted by reason) and the Kafka account over the plaintext the session handed out, as for any Kafka
connection. `balance` joins them into the one summary.json shows, over the wire bytes:

    seen = decoded + Σ Kafka skips + tls_overhead + Σ tls_<reason>

where tls_overhead is the handshake, alert and ChangeCipherSpec records plus what wraps the plaintext of the records
decrypted (headers, nonces, tags, padding), and tls_<reason> the records not decrypted. Each reason becomes one
`tls_<reason>` anomaly per direction at the connection's end, with its bytes and where it was first met.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkatap.dissect import tls
from kafkatap.dissect.anomalies import KINDS
from kafkatap.dissect.kafka.messages import Messages
from kafkatap.dissect.kafka.state import DIRECTIONS, REQUEST, RESPONSE, ConnState
from kafkatap.dissect.streams.reassembly import Where
from kafkatap.dissect.tls import KeyLog, TlsStats

if TYPE_CHECKING:
    from kafkatap.dissect.tls import Output

DECRYPTED, PARTLY, NOT_DECRYPTED = "decrypted", "partly_decrypted", "not_decrypted"
OUTCOMES = (DECRYPTED, PARTLY, NOT_DECRYPTED)
"""What became of a TLS connection: every record decrypted (or TLS overhead), some, or none."""


class Decryption:
    """One connection's TLS session, and where each reason for not decrypting was first met (for its anomaly)."""

    __slots__ = ("session", "first")

    def __init__(self, keylog: KeyLog) -> None:
        self.session = tls.TlsSession(keylog)  # through the package: the session is imported at the first one
        self.first: dict[tuple[int, str], tuple[Where, int]] = {}  # (direction, reason) -> (where, wire offset)

    def feed(self, st: ConnState, direction: int, data: bytes, where: Where) -> Output:
        """Wire bytes of one direction; returns (direction, plaintext) for the Kafka framers, or (direction, n) for
        a hole of n wire bytes in that direction's plaintext (a record not decrypted after records that were)."""
        offsets = self._offsets()
        out = self.session.feed(direction, data)
        self._note(offsets, where)
        if out and st.tls_version is None:
            st.tls_version = self.session.version_name
        return out

    def gap(self, direction: int, nbytes: int, where: Where) -> None:
        """The capture lost nbytes of a direction: TLS stops there (its later records cannot be opened)."""
        offsets = self._offsets()
        self.session.gap(direction, nbytes)
        self._note(offsets, where)

    def offset(self, direction: int) -> int:
        """Wire stream offset of the next byte of a direction (gaps included, as TCP offsets do)."""
        stats = self.session.stats[direction]
        return stats.seen + stats.lost_in_gaps

    def close(self, out: Messages, st: ConnState, where: Where) -> str:
        """The connection ended: what the session still holds is booked, every reason a direction was not
        decrypted becomes one anomaly row; returns the connection's outcome (OUTCOMES)."""
        offsets = self._offsets()
        self.session.close()
        self._note(offsets, where)
        session = self.session
        for (direction, reason), (first_where, offset) in self.first.items():
            stats = session.stats[direction]
            nbytes = stats.undecrypted[reason]
            if stats.stopped is not None and stats.stopped.startswith(reason):
                why = f" from here on: {stats.stopped}"
            else:
                why = f". {KINDS['tls_' + reason].meaning}"
            detail = f"{session.version_name or 'TLS'} {DIRECTIONS[direction]}s: {nbytes} bytes not decrypted{why}"
            out.anomaly(f"tls_{reason}", detail, first_where, st.conn_id, direction, offset, nbytes)
        stats = session.stats
        if not any(s.undecrypted for s in stats):
            return DECRYPTED
        return PARTLY if any(s.decrypted for s in stats) else NOT_DECRYPTED

    def balance(self, st: ConnState, direction: int) -> dict:
        """One direction's byte account over the wire bytes (the module docstring's equation), with what TLS did."""
        kafka = st.account.balance(direction)
        stats = self.session.stats[direction]
        skipped = kafka["skipped"]
        overhead = stats.tls_overhead + stats.decrypted - stats.plaintext
        if overhead:
            skipped["tls_overhead"] = overhead
        for reason, nbytes in stats.undecrypted.items():
            skipped[f"tls_{reason}"] = nbytes
        return {"seen": stats.seen, "decoded": kafka["decoded"], "skipped": skipped,
                "lost_in_gaps": stats.lost_in_gaps, "tls": self._described(direction, stats)}

    def _described(self, direction: int, stats: TlsStats) -> dict:
        session = self.session
        return {"version": session.version_name, "suite": session.suite_name, "decrypted": stats.decrypted,
                "plaintext": stats.plaintext, "stopped": stats.stopped,
                "alerts": [alert.name for alert in session.alerts if alert.direction == direction]}

    def _offsets(self) -> tuple[int, int]:
        """Per direction, the wire offset of the first byte not booked yet: where a reason met next begins."""
        client, server = self.session.stats
        return self.offset(REQUEST) - client.pending, self.offset(RESPONSE) - server.pending

    def _note(self, offsets: tuple[int, int], where: Where) -> None:
        for direction, stats in enumerate(self.session.stats):
            for reason in stats.undecrypted:
                if (direction, reason) not in self.first:
                    self.first[(direction, reason)] = (where, offsets[direction])
