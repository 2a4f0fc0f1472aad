"""TLS decryption for `kafkatap dissect --tls-keylog FILE`: a TLS connection's two TCP byte streams and an NSS key log
in, the application data out, ready for the Kafka framer as if it had been sent in the clear.

    keylog = KeyLog.from_files(paths)             # malformed lines counted (keylog.malformed), never fatal
    session = TlsSession(keylog)                  # one per connection
    session.feed(direction, data) -> list[(direction, plaintext)]   # 0: client -> server, 1: server -> client;
                                                  # (direction, int): a hole of that many wire bytes in the plaintext
    session.gap(direction, nbytes)                # bytes the capture lost: that direction stops (lost_segment)
    session.close()                               # the connection ended: what is buffered is booked
    session.stats -> (TlsStats, TlsStats)         # seen = decrypted + tls_overhead + Σ undecrypted + pending
    session.version_name, session.suite_name, session.alerts

Decrypted: TLS 1.3 (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256, KeyUpdate
included) and TLS 1.2 ECDHE_RSA / ECDHE_ECDSA with AES_128_GCM_SHA256, AES_256_GCM_SHA384, CHACHA20_POLY1305_SHA256.
Everything else is booked, never dropped: see account.py for the reasons. Secrets never reach a repr or a counter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kafkatap.dissect.tls.account import REASONS, TlsStats
from kafkatap.dissect.tls.alerts import Alert
from kafkatap.dissect.tls.keylog import KeyLog

if TYPE_CHECKING:
    from kafkatap.dissect.tls.session import CLIENT, SERVER, Output, TlsSession

_SESSION = ("CLIENT", "SERVER", "Output", "TlsSession")

__all__ = ["CLIENT", "REASONS", "SERVER", "Alert", "KeyLog", "Output", "TlsSession", "TlsStats"]


def __getattr__(name: str) -> Any:
    """The session's names, imported at their first use: the session imports cryptography, a sixth of the
    dissector's own start-up, which a run that meets no TLS connection with a key log never needs."""
    if name in _SESSION:
        return getattr(importlib.import_module("kafkatap.dissect.tls.session"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
