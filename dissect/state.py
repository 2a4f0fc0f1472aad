"""Per-connection state of the dissector, and the messages waiting in it."""

from __future__ import annotations

from typing import Any

from kafkatap.dissect.framing import Framer
from kafkatap.dissect.pairing import InFlight
from kafkatap.dissect.plausible import RequestSync, ResponseSync
from kafkatap.dissect.reassembly import Where

REQUEST, RESPONSE = 0, 1
DIRECTIONS = ("request", "response")


class Request:
    """A request waiting for its response, with what its row and its response's rows need."""

    __slots__ = ("seq", "ts", "size", "api_key", "api_version", "correlation_id", "client_id", "body", "found",
                 "error", "known", "produce")

    def __init__(self, seq: int, ts: int, size: int, api_key: int, api_version: int, correlation_id: int) -> None:
        self.seq = seq
        self.ts = ts
        self.size = size
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id: str | None = None
        self.body: dict | None = None
        self.found: Any = None
        self.error: str | None = None
        self.known = True
        self.produce: list | None = None  # Produce: (topic, topic_id, partition, batches) awaiting the response


class Response:
    """A decoded (or undecodable) response, paired with its request."""

    __slots__ = ("ts", "size", "body", "found", "error")

    def __init__(self, ts: int, size: int) -> None:
        self.ts = ts
        self.size = size
        self.body: dict | None = None
        self.found: Any = None
        self.error: str | None = None


class ConnState:
    """The sink's state for one connection (kept in Conn.state)."""

    __slots__ = ("conn_id", "client_addr", "broker_addr", "client_side", "kind", "framers", "req_sync", "resp_sync",
                 "inflight", "seq", "account", "probe", "probe_bytes", "client_tokens", "skip_run", "gaps", "orphans",
                 "orphan_bytes")

    def __init__(self) -> None:
        self.conn_id: str | None = None
        self.client_addr = self.broker_addr = None
        self.client_side: int | None = None
        self.kind = "probe"  # probe -> kafka | tls | ignored
        self.framers: list[Framer] = []
        self.req_sync = RequestSync()
        self.inflight = InFlight()
        self.resp_sync = ResponseSync(self.inflight.oldest)
        self.seq = 0
        self.account = [{"seen": 0, "decoded": 0}, {"seen": 0, "decoded": 0}]  # by direction
        self.probe: list[tuple[int, int, bytes, Where]] = []  # (side, ts, data, where) while kind == "probe"
        self.probe_bytes = 0
        self.client_tokens = False  # after SaslHandshake v0: the client sends raw size-prefixed SASL tokens
        self.skip_run: list[list | None] = [None, None]  # [reason, offset, nbytes, where] being coalesced
        self.gaps = [0, 0]  # bytes the capture lost, by direction
        self.orphans: dict[int, tuple[int, int, bytes]] = {}  # responses awaiting a late request: (ts, offset, payload)
        self.orphan_bytes = 0


def endpoint(addr: tuple) -> str:
    """`ip:port`, or `[ip]:port` for IPv6."""
    ip, port = addr
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
