"""The byte account of one TLS direction: every byte fed is booked exactly once, so a summary can prove nothing was
dropped silently:

    seen = decrypted + tls_overhead + Σ undecrypted[reason] + pending

decrypted     whole application_data records (header, nonce, tag, padding included) whose plaintext was recovered
tls_overhead  handshake, alert, ChangeCipherSpec (and heartbeat) records, in the clear or decrypted
undecrypted   record bytes whose plaintext was not recovered, by reason (REASONS)
pending       bytes buffered: an incomplete record, or records waiting for the other direction's hello

Bytes the capture lost (gaps) were never fed: they are kept beside the equation, in lost_in_gaps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DECRYPTED = "decrypted"
TLS_OVERHEAD = "tls_overhead"
NO_KEY = "no_key"  # the key log has no (usable) secret for this client_random
NO_HANDSHAKE = "no_handshake"  # the hellos were not captured: the capture began mid-connection, or one side is missing
UNSUPPORTED_SUITE = "unsupported_suite"  # a suite or version not decrypted here (CBC, RC4, CCM, TLS 1.0, ...)
EARLY_DATA = "early_data"  # TLS 1.3 0-RTT records: not decrypted
LOST_SEGMENT = "lost_segment"  # after a capture gap: the record boundaries and sequence numbers are lost
BAD_RECORD = "bad_record"  # a header that is not TLS (then everything after it), or a record failing authentication
TRUNCATED = "truncated"  # a record the connection's end cut short
RENEGOTIATION = "renegotiation"  # TLS 1.2 after a renegotiation's ChangeCipherSpec: its keys are not followed
REASONS = (NO_KEY, NO_HANDSHAKE, UNSUPPORTED_SUITE, EARLY_DATA, LOST_SEGMENT, BAD_RECORD, TRUNCATED, RENEGOTIATION)


@dataclass
class TlsStats:
    """One direction's byte account (see the module docstring)."""

    seen: int = 0
    decrypted: int = 0
    tls_overhead: int = 0
    undecrypted: dict[str, int] = field(default_factory=dict)  # reason -> bytes
    pending: int = 0
    lost_in_gaps: int = 0
    plaintext: int = 0  # application bytes handed out, from the `decrypted` records
    stopped: str | None = None  # why this direction stopped decrypting: "reason: detail"

    def book(self, category: str, nbytes: int) -> None:
        if category == DECRYPTED:
            self.decrypted += nbytes
        elif category == TLS_OVERHEAD:
            self.tls_overhead += nbytes
        elif nbytes:
            self.undecrypted[category] = self.undecrypted.get(category, 0) + nbytes

    @property
    def balanced(self) -> bool:
        return self.seen == self.decrypted + self.tls_overhead + sum(self.undecrypted.values()) + self.pending
