"""Per-connection state of the dissector, and the messages waiting in it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkatap.dissect import native
from kafkatap.dissect.kafka.account import Account
from kafkatap.dissect.kafka.framing import Framer
from kafkatap.dissect.kafka.orphans import Orphans
from kafkatap.dissect.kafka.pairing import InFlight
from kafkatap.dissect.kafka.plausible import RequestSync, ResponseSync
from kafkatap.dissect.kafka.sasl import SaslTokens
from kafkatap.dissect.streams.reassembly import Where

if TYPE_CHECKING:
    from kafkatap.dissect.kafka.bodies import Body
    from kafkatap.dissect.kafka.decryption import Decryption
    from kafkatap.dissect.kafka.skips import Skips

REQUEST, RESPONSE = 0, 1
DIRECTIONS = ("request", "response")


class Request:
    """A request waiting for its response, with what its row and its response's rows need. `at` is the packet that
    carried its first byte: its time, capture file and packet number (from 1, as Wireshark's `frame.number`)."""

    __slots__ = ("seq", "ts", "capture_file", "packet", "size", "api_key", "api_version", "correlation_id",
                 "client_id", "body", "error", "known", "produce")

    def __init__(self, seq: int, at: Where, size: int, api_key: int, api_version: int, correlation_id: int) -> None:
        self.seq = seq
        self.capture_file, packet_index, self.ts = at
        self.packet = packet_index + 1
        self.size = size
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id: str | None = None
        self.body: Body | None = None
        self.error: str | None = None
        self.known = True
        # Produce: (topic, topic_id, partition, batches, fingerprints or None) awaiting the response
        self.produce: list | None = None


class Response:
    """A decoded (or undecodable) response, paired with its request; `at` as for Request."""

    __slots__ = ("ts", "capture_file", "packet", "size", "body", "error")

    def __init__(self, at: Where, size: int) -> None:
        self.capture_file, packet_index, self.ts = at
        self.packet = packet_index + 1
        self.size = size
        self.body: Body | None = None
        self.error: str | None = None


class ConnState:
    """The sink's state for one connection (kept in Conn.state)."""

    __slots__ = ("conn_id", "client_addr", "broker_addr", "client_side", "kind", "framers", "skips", "req_sync",
                 "resp_sync", "inflight", "orphans", "sasl", "seq", "account", "probe", "probe_bytes", "tls",
                 "tls_version")

    def __init__(self) -> None:
        self.conn_id: str | None = None
        self.client_addr = self.broker_addr = None
        self.client_side: int | None = None
        self.kind = "probe"  # probe -> kafka | tls | ignored
        self.tls: Decryption | None = None  # a TLS connection being decrypted: framed as Kafka too
        self.tls_version: str | None = None  # "TLS 1.3" once it handed out plaintext: the frames rows' `tls`
        self.framers: list[Framer] = []  # by side, once Kafka
        self.skips: tuple[Skips, Skips] | None = None  # by direction, once Kafka
        self.req_sync = RequestSync()
        self.inflight = InFlight()
        self.resp_sync = ResponseSync(self.inflight.oldest)
        self.orphans = Orphans()
        self.sasl = SaslTokens(self.req_sync, self.resp_sync)
        self.seq = 0
        self.account = Account()
        self.probe: list[tuple[int, int, bytes | int, Where]] = []  # (side, ts, data or a gap's size, where)
        self.probe_bytes = 0


_compiled = native.extension("kafkatap.dissect.kafka._state")
if native.compiled and _compiled is not None:  # their compiled twins, whose fields the compiled message path reads in C
    Request, Response, ConnState = _compiled.Request, _compiled.Response, _compiled.ConnState  # type: ignore[misc]


def endpoint(addr: tuple) -> str:
    """`ip:port`, or `[ip]:port` for IPv6."""
    ip, port = addr
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
