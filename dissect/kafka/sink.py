"""The dissector's StreamSink: TCP byte streams in, Kafka messages out (to `Messages`).

Per connection it decides whether the stream is Kafka (a configured port, or request-shaped first bytes) and which
side is the client (`classify`, holding the first bytes meanwhile), frames each direction (`framing`, its skips
booked and reported by `skips`) and hands the frames to the request/response `exchange`. Every byte a direction
delivers lands in the connection's byte `account`, closed into `streams` when the connection ends. TLS on a Kafka
port is counted, or, given a key log, decrypted (`decryption`) and its plaintext framed like any Kafka stream.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from kafkatap.dissect import native
from kafkatap.dissect.kafka.classify import PROBE_LIMIT, classify
from kafkatap.dissect.kafka.decryption import NOT_DECRYPTED, OUTCOMES, Decryption
from kafkatap.dissect.kafka.exchange import Exchange
from kafkatap.dissect.kafka.framing import Framer
from kafkatap.dissect.kafka.messages import Messages
from kafkatap.dissect.kafka.skips import Skips
from kafkatap.dissect.kafka.state import DIRECTIONS, REQUEST, RESPONSE, ConnState, endpoint
from kafkatap.dissect.kafka.topics import TopicNames
from kafkatap.dissect.streams.reassembly import Conn, Where
from kafkatap.dissect.streams.workers import owner
from kafkatap.dissect.tls import KeyLog

if TYPE_CHECKING:
    from kafkatap.dissect.tls import Output

_compiled = native.extension("kafkatap.dissect.kafka._sink")
_Base: type = _compiled.SinkFields if native.compiled and _compiled is not None else object


class Sink(_Base):  # type: ignore[valid-type, misc]
    """Implements streams.reassembly.StreamSink."""

    def __init__(self, out: Messages, topics: TopicNames, ports: set[int], part: tuple[int, int] = (0, 1),
                 keylog: KeyLog | None = None) -> None:
        self.part, self.parts = part  # this sink handles the connections whose key hashes to `part` of `parts`
        self.ports = ports
        self.keylog = keylog  # TLS connections are decrypted with it; without one they are only counted
        self.out = out
        self.exchange = Exchange(out, topics)
        picked = native.pick(on_data, _compiled)
        self.on_data = partial(picked, self)
        """StreamSink.on_data: this module's `on_data`, or its compiled twin (chosen once per run)."""
        if _Base is not object:  # the compiled driver calls the compiled twin in C when it is the one picked
            self.compiled = picked is not on_data
        self.streams: list[dict] = []  # byte account of every closed Kafka stream
        self.connections = {"kafka": 0, "tls": 0, "not_kafka": 0}
        self.tls_outcomes = dict.fromkeys(OUTCOMES, 0)  # TLS connections by what decryption made of them
        self.with_payload = 0  # this worker's connections that carried payload
        self.closed: dict[Conn, tuple[str, str, str, str]] = {}
        """Kafka connections closed and not yet forgotten: (conn_id, client_addr, broker_addr, what closed it)."""
        self.warnings: list[str] = []

    def on_open(self, conn: Conn) -> None:
        conn.state = ConnState()
        if self.parts > 1 and self._owner(conn) != self.part:
            conn.state.kind = "foreign"  # another worker's connection (IP fragments): on_data drops it at once
        else:
            self.with_payload += 1

    def _owner(self, conn: Conn) -> int:
        return owner(conn.conn_key, self.parts)

    def on_gap(self, conn: Conn, side: int, ts_us: int, nbytes: int, where: Where) -> None:
        st: ConnState = conn.state
        if st is None or (st.kind != "kafka" and st.tls is None):
            if st is not None and st.kind == "probe":
                st.probe.append((side, ts_us, nbytes, where))
            return
        direction = REQUEST if side == st.client_side else RESPONSE
        st.skips[direction].flush()
        if st.tls is None:
            st.account.lost(direction, nbytes)
            offset = st.framers[side].offset
        else:  # booked as lost by the TLS session; its offset is in the wire stream
            offset = st.tls.offset(direction)
            st.tls.gap(direction, nbytes, where)
        self.out.anomaly("gap", f"{nbytes} bytes missing from the capture", where, st.conn_id, direction,
                         offset, nbytes)
        st.framers[side].gap(nbytes, where)

    def on_close(self, conn: Conn, ts_us: int, reason: str, where: Where) -> None:
        """`where` is the packet that closed the connection (FIN, RST), or the last one read when the capture ended
        or the connection idled out: what is still held is reported there."""
        st: ConnState = conn.state
        if st is None or st.kind == "foreign":
            return
        if st.kind == "probe":
            verdict, st.client_side = classify(conn, st.probe, self.ports, final=True)
            self._start(conn, st, verdict)
        if st.tls is not None:
            self.tls_outcomes[st.tls.close(self.out, st, where)] += 1
            self._close_kafka(st, where)
        elif st.kind == "kafka":
            self._close_kafka(st, where)
        elif st.kind == "tls":
            nbytes = st.account.total("tls")
            self.out.anomaly("tls", f"TLS on a Kafka port: {nbytes} bytes not decoded; give --tls-keylog to "
                                    "decrypt", where, st.conn_id, None, None, nbytes)
            self.tls_outcomes[NOT_DECRYPTED] += 1
            self._close_stream(st)
        if st.conn_id is not None and st.kind in ("kafka", "tls"):
            self.closed[conn] = (st.conn_id, st.client_addr, st.broker_addr, reason)
        conn.state = None

    def on_forget(self, conn: Conn) -> None:
        """The capture is done with conn: its TCP analysis counts are final (a reset may follow the FINs)."""
        closed = self.closed.pop(conn, None)
        if closed is not None:
            self.out.connection(conn, *closed)

    def on_anomaly(self, kind: str, detail: str, where: Where, nbytes: int, conn: Conn | None,
                   side: int | None) -> None:
        if self.parts > 1 and (self._owner(conn) if conn is not None else 0) != self.part:
            return  # reported by the worker owning the connection (file-level problems: by worker 0)
        st = conn.state if conn is not None else None
        direction = None
        if st is not None and st.client_side is not None and side is not None:
            direction = REQUEST if side == st.client_side else RESPONSE
        if kind == "bad_capture_file":
            self.warnings.append(detail)
        self.out.anomaly(kind, detail, where, st.conn_id if st is not None else None, direction, None, nbytes)

    def _start(self, conn: Conn, st: ConnState, verdict: str) -> bool:
        """Leave the probe state; replay what was held."""
        probe, st.probe, st.probe_bytes = st.probe, [], 0
        if verdict == "ignored":
            st.kind = "ignored"
            self.connections["not_kafka"] += 1
            return False
        client = st.client_side
        addr = conn.addr
        st.client_addr, st.broker_addr = endpoint(addr[client]), endpoint(addr[1 - client])
        st.conn_id = f"{st.client_addr}>{st.broker_addr}@{conn.first_ts_us}"
        st.kind = verdict
        self.connections[verdict] += 1
        if verdict == "tls" and self.keylog is not None:
            st.tls = Decryption(self.keylog)
        if verdict == "kafka" or st.tls is not None:
            st.skips = (Skips(self.out, st.conn_id, st.account, REQUEST),
                        Skips(self.out, st.conn_id, st.account, RESPONSE))
            # After a SYN the broker's stream starts on a frame boundary; without one, wait for an awaited response.
            # The plaintext of TLS starts on one (the capture holds the hellos, or nothing is decrypted).
            start = conn.syn_seen or st.tls is not None
            st.framers = [None, None]
            st.framers[client] = Framer(st.req_sync, st.skips[REQUEST].on_skip, anchored=start)
            st.framers[1 - client] = Framer(st.resp_sync, st.skips[RESPONSE].on_skip, synced=start)
        for side, ts, data, where in probe:
            if isinstance(data, int):
                self.on_gap(conn, side, ts, data, where)
            else:
                self.on_data(conn, side, ts, data, where)
        return True

    def _close_kafka(self, st: ConnState, where: Where) -> None:
        """What the framers still hold, requests first (responses pair with them), then what waits unanswered."""
        for side in (st.client_side, 1 - st.client_side):
            direction = REQUEST if side == st.client_side else RESPONSE
            handle = self.exchange.request if direction == REQUEST else self.exchange.response
            for at, offset, payload in st.framers[side].close(where):
                st.skips[direction].flush()
                handle(st, at, offset, payload, where)
            st.skips[direction].flush()
        self.exchange.close(st, where)
        self._close_stream(st)

    def _close_stream(self, st: ConnState) -> None:
        for direction in (REQUEST, RESPONSE):
            balance = st.account.balance(direction) if st.tls is None else st.tls.balance(st, direction)
            self.streams.append({"conn_id": st.conn_id, "direction": DIRECTIONS[direction], **balance})


def feed(exchange: Exchange, st: ConnState, side: int, data: bytes, where: Where) -> None:
    """Bytes of a Kafka connection from the packet `where`: booked as seen, framed, and each whole frame handed to
    the exchange."""
    direction = REQUEST if side == st.client_side else RESPONSE
    st.account.seen(direction, len(data))
    frames = st.framers[side].feed(data, where)
    if frames:
        st.skips[direction].flush()
        handle = exchange.request if direction == REQUEST else exchange.response
        for at, offset, payload in frames:
            handle(st, at, offset, payload, where)


def decrypted(sink: Sink, st: ConnState, plaintext: Output, where: Where) -> None:
    """What a TLS connection's bytes decrypted to, framed as Kafka; a hole (a record not decrypted) cuts the frame
    it falls in, as a capture gap would."""
    for direction, data in plaintext:
        side = st.client_side if direction == REQUEST else 1 - st.client_side
        if isinstance(data, int):
            st.skips[direction].flush()
            st.framers[side].gap(data, where)
        else:
            feed(sink.exchange, st, side, data, where)


def on_data(sink: Sink, conn: Conn, side: int, ts_us: int, data: bytes, where: Where) -> bool:
    """Bytes of a connection: fed to the framers once it is Kafka, held while it is being classified (False: stop
    following it)."""
    st: ConnState = conn.state
    kind = st.kind
    if kind == "kafka":
        feed(sink.exchange, st, side, data, where)
        return True
    if kind == "ignored" or kind == "foreign":
        return False
    if kind == "tls":
        direction = REQUEST if side == st.client_side else RESPONSE
        if st.tls is not None:
            decrypted(sink, st, st.tls.feed(st, direction, data, where), where)
            return True
        st.account.seen(direction, len(data))
        st.account.skipped(direction, "tls", len(data))
        return True
    st.probe.append((side, ts_us, data, where))
    st.probe_bytes += len(data)
    verdict, st.client_side = classify(conn, st.probe, sink.ports)
    if verdict == "probe":
        if st.probe_bytes <= PROBE_LIMIT:
            return True
        verdict = "ignored"
    return sink._start(conn, st, verdict)
