"""The dissector's StreamSink: TCP byte streams in, Parquet rows out.

Per connection it decides whether the stream is Kafka (a configured port, or request-shaped first bytes) and which
side is the client, frames each direction (`framing`), decodes and pairs requests with responses (`pairing`), and
turns them into frames/, batches/, records/, share/ and anomalies/ rows. Every byte a direction delivers is booked
once, as decoded or skipped-with-a-reason, so the summary can prove nothing was silently dropped.
"""

from __future__ import annotations

import struct
from typing import Any

from dissect import batches as bt
from dissect import share
from dissect.errors import DecodeError
from dissect.extract import REQUEST_FIELDS, RESPONSE_FIELDS, error_code, top_level, walk
from dissect.framing import YES, Framer
from dissect.pairing import InFlight
from dissect.plausible import RequestSync, ResponseSync, decode_answer, request_check
from dissect.protocol import api_name, decode_request, decode_request_header, error_name, is_known, to_json
from dissect.reassembly import Conn, Where
from dissect.topics import TopicNames
from dissect.writer import Output

REQUEST, RESPONSE = 0, 1
DIRECTIONS = ("request", "response")
_HEAD = struct.Struct(">hhi").unpack_from
_I32 = struct.Struct(">i").unpack_from
_SIZE = struct.Struct(">i").pack

PRODUCE, FETCH, SASL_HANDSHAKE = 0, 1, 17
MAX_ORPHANS = 64
MAX_ORPHAN_BYTES = 16 << 20
"""Responses held per connection while their request may still come (as much as the reassembler holds back)."""
PROBE_LIMIT = 64 * 1024
"""Bytes held per connection while deciding whether an unknown port speaks Kafka."""

NOT_ANOMALIES = frozenset({"sasl_token"})
"""Skip reasons that are normal protocol, counted in the byte account but not reported as anomalies."""


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


def _addr(endpoint: tuple) -> str:
    ip, port = endpoint
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class Sink:
    """Implements dissect.reassembly.StreamSink."""

    def __init__(self, out: Output, ports: set[int], *, records: bool, payloads: bool) -> None:
        self.out = out
        self.ports = ports
        self.records = records
        self.payloads = payloads
        self.topics = TopicNames()
        self.where = Where("", -1, 0)
        self.frames = out["frames"]
        self.batches = out["batches"]
        self.share = out["share"]
        self.anomalies = out["anomalies"]
        self.record_table = out["records"] if records else None
        self.streams: list[dict] = []  # byte account of every closed Kafka stream
        self.connections = {"kafka": 0, "tls": 0, "not_kafka": 0}
        self.messages: dict[str, int] = {}
        self.statuses: dict[str, int] = {}
        self.anomaly_counts: dict[str, int] = {}
        self.warnings: list[str] = []

    # ---- StreamSink -------------------------------------------------------------------------------------------

    def on_open(self, conn: Conn) -> None:
        conn.state = ConnState()

    def on_data(self, conn: Conn, side: int, ts_us: int, data: bytes, where: Where) -> bool:
        st: ConnState = conn.state
        self.where = where
        kind = st.kind
        if kind == "kafka":
            self._feed(conn, st, side, ts_us, data)
            return True
        if kind == "ignored":
            return False
        if kind == "tls":
            acc = st.account[REQUEST if side == st.client_side else RESPONSE]
            acc["seen"] += len(data)
            acc["tls"] = acc.get("tls", 0) + len(data)
            return True
        st.probe.append((side, ts_us, data, where))
        st.probe_bytes += len(data)
        verdict = self._classify(conn, st)
        if verdict == "probe":
            if st.probe_bytes <= PROBE_LIMIT:
                return True
            verdict = "ignored"
        return self._start(conn, st, verdict)

    def on_gap(self, conn: Conn, side: int, ts_us: int, nbytes: int, where: Where) -> None:
        st: ConnState = conn.state
        self.where = where
        if st is None or st.kind != "kafka":
            if st is not None and st.kind == "probe":
                st.probe.append((side, ts_us, nbytes, where))
            return
        direction = REQUEST if side == st.client_side else RESPONSE
        st.gaps[direction] += nbytes
        self._flush_skip(st, direction)
        offset = st.framers[side].offset
        self._anomaly("gap", f"{nbytes} bytes missing from the capture", st, direction, offset, nbytes)
        st.framers[side].gap(nbytes)

    def on_close(self, conn: Conn, ts_us: int, reason: str) -> None:
        st: ConnState = conn.state
        if st is None:
            return
        if st.kind == "probe":
            self._start(conn, st, self._classify(conn, st, final=True))
        if st.kind == "kafka":
            for side in (st.client_side, 1 - st.client_side):  # requests first: responses pair with them
                direction = REQUEST if side == st.client_side else RESPONSE
                handle = self._request if direction == REQUEST else self._response
                for ts_f, offset, payload in st.framers[side].close():
                    self._flush_skip(st, direction)
                    handle(st, ts_f, offset, payload)
                self._flush_skip(st, direction)
            for request in st.inflight.drain():
                self._emit_request_only(st, request)
            for correlation_id in list(st.orphans):
                self._release_orphan(st, correlation_id, st.orphans.pop(correlation_id))
            self._close_stream(st)
        elif st.kind == "tls":
            nbytes = st.account[0].get("tls", 0) + st.account[1].get("tls", 0)
            self._anomaly("tls", f"TLS on a Kafka port: {nbytes} bytes not decoded", st, None, None, nbytes)
            self._close_stream(st)
        conn.state = None

    def on_anomaly(self, kind: str, detail: str, where: Where, nbytes: int, conn: Conn | None,
                   side: int | None) -> None:
        st = conn.state if conn is not None else None
        direction = None
        if st is not None and st.client_side is not None and side is not None:
            direction = REQUEST if side == st.client_side else RESPONSE
        if kind == "bad_capture_file":
            self.warnings.append(detail)
        self._row_anomaly(kind, detail, where, st.conn_id if st is not None else None, direction, None, nbytes)

    # ---- connection start -------------------------------------------------------------------------------------

    def _classify(self, conn: Conn, st: ConnState, final: bool = False) -> str:
        """'kafka', 'tls', 'ignored', or 'probe' (need more bytes). Sets st.client_side for kafka and tls.

        Direction: from the SYN (side 0 is the client), else from the port (the side talking to a Kafka port),
        else from the shape (the side whose first bytes parse as a request header).
        """
        on_port = self._on_kafka_port(conn)
        port_side = self._port_side(conn)
        spoken: dict[int, bytes] = {}
        for side, _, data, _ in st.probe:
            if side not in spoken:
                spoken[side] = b"" if isinstance(data, int) else data[:3]  # a gap first: its start is unknown
        for side, head in spoken.items():
            if len(head) == 3 and head[0] in (0x16, 0x17) and head[1] == 3 and head[2] <= 4:
                if not on_port:
                    return "ignored"
                st.client_side = 0 if conn.syn_seen else (port_side if port_side is not None else side)
                return "tls"
        if on_port and (conn.syn_seen or port_side is not None):
            st.client_side = 0 if conn.syn_seen else port_side
            return "kafka"
        undecided = False
        for side in (0,) if conn.syn_seen else (0, 1):
            if side not in spoken:
                undecided = True
                continue
            verdict = request_check(self._side_bytes(st, side), 0, body=False)
            if verdict == YES:
                st.client_side = side
                return "kafka"
            undecided |= verdict < 0
        if undecided and not final:
            return "probe"
        if on_port:  # both ends on Kafka ports and no request-shaped start: keep it, first sender as client
            st.client_side = 0
            return "kafka"
        return "ignored"

    @staticmethod
    def _side_bytes(st: ConnState, side: int) -> bytes:
        out = b""
        for s, _, data, _ in st.probe:
            if s == side:
                if isinstance(data, int):
                    break
                out += data
                if len(out) >= 32 * 1024:
                    break
        return out

    def _on_kafka_port(self, conn: Conn) -> bool:
        return conn.addr[0][1] in self.ports or conn.addr[1][1] in self.ports

    def _port_side(self, conn: Conn) -> int | None:
        """The client side by port: the side talking to a Kafka port. None if neither or both ports are Kafka's."""
        to0 = conn.addr[0][1] in self.ports
        to1 = conn.addr[1][1] in self.ports
        if to0 == to1:
            return None
        return 1 if to0 else 0

    def _start(self, conn: Conn, st: ConnState, verdict: str) -> bool:
        """Leave the probe state; replay what was held."""
        probe, st.probe, st.probe_bytes = st.probe, [], 0
        if verdict == "probe":
            st.probe = probe
            return True
        if verdict == "ignored":
            st.kind = "ignored"
            self.connections["not_kafka"] += 1
            return False
        client = st.client_side
        addr = conn.addr
        st.client_addr, st.broker_addr = _addr(addr[client]), _addr(addr[1 - client])
        st.conn_id = f"{st.client_addr}>{st.broker_addr}@{conn.first_ts_us}"
        st.kind = verdict
        self.connections[verdict] += 1
        if verdict == "kafka":
            st.framers = [None, None]
            st.framers[client] = Framer(st.req_sync, self._skipper(st, REQUEST))
            # After a SYN the broker's stream starts on a frame boundary; without one, wait for an awaited response.
            st.framers[1 - client] = Framer(st.resp_sync, self._skipper(st, RESPONSE), synced=conn.syn_seen)
        for side, ts, data, where in probe:
            self.where = where
            if isinstance(data, int):
                self.on_gap(conn, side, ts, data, where)
            else:
                self.on_data(conn, side, ts, data, where)
        return True

    # ---- framing ----------------------------------------------------------------------------------------------

    def _skipper(self, st: ConnState, direction: int):
        def on_skip(reason: str, nbytes: int, offset: int) -> None:
            if reason == "bad_length":
                self._flush_skip(st, direction)
                self._anomaly("bad_length", "impossible frame size prefix: resynchronising", st, direction, offset, 0)
                return
            acc = st.account[direction]
            acc[reason] = acc.get(reason, 0) + nbytes
            run = st.skip_run[direction]
            if run is not None and run[0] == reason and run[1] + run[2] == offset:
                run[2] += nbytes
                return
            self._flush_skip(st, direction)
            st.skip_run[direction] = [reason, offset, nbytes, self.where]
        return on_skip

    def _flush_skip(self, st: ConnState, direction: int) -> None:
        run = st.skip_run[direction]
        if run is None:
            return
        st.skip_run[direction] = None
        reason, offset, nbytes, where = run
        if reason in NOT_ANOMALIES:
            return
        self._row_anomaly(reason, SKIP_DETAIL.get(reason, reason), where, st.conn_id, direction, offset, nbytes)

    def _feed(self, conn: Conn, st: ConnState, side: int, ts: int, data: bytes) -> None:
        if side == st.client_side:
            st.account[REQUEST]["seen"] += len(data)
            frames = st.framers[side].feed(ts, data)
            if frames:
                self._flush_skip(st, REQUEST)
                for ts_f, offset, payload in frames:
                    self._request(st, ts_f, offset, payload)
        else:
            st.account[RESPONSE]["seen"] += len(data)
            frames = st.framers[side].feed(ts, data)
            if frames:
                self._flush_skip(st, RESPONSE)
                for ts_f, offset, payload in frames:
                    self._response(st, ts_f, offset, payload)

    # ---- requests ---------------------------------------------------------------------------------------------

    def _request(self, st: ConnState, ts: int, offset: int, payload: bytes) -> None:
        acc = st.account[REQUEST]
        size = len(payload) + 4
        if st.client_tokens:
            if request_check(_SIZE(len(payload)) + payload, 0) != YES:
                acc["sasl_token"] = acc.get("sasl_token", 0) + size
                return
            self._sasl_tokens(st, False)
        if len(payload) < 8:
            acc["malformed_header"] = acc.get("malformed_header", 0) + size
            self._anomaly("malformed_header", f"a {size}-byte frame is too short for a request header", st,
                          REQUEST, offset, size)
            return
        api_key, api_version, correlation_id = _HEAD(payload, 0)
        st.req_sync.last_correlation_id = correlation_id
        st.seq += 1
        req = Request(st.seq, ts, size, api_key, api_version, correlation_id)
        try:
            header, pos = decode_request_header(payload, 0)
            req.client_id = header.get("client_id")
        except DecodeError as e:
            pos = -1
            req.error = f"request header: {e.reason} at offset {e.offset}"
        if not is_known(api_key, api_version):
            req.known = False
            acc["unknown_api"] = acc.get("unknown_api", 0) + size
            self._anomaly("unknown_api", f"api key {api_key} version {api_version} is not in the schemas", st,
                          REQUEST, offset, size, api_key, correlation_id)
        elif pos >= 0:
            try:
                req.body, end = decode_request(api_key, api_version, payload, pos)
                self._book_decoded(st, REQUEST, offset, size, len(payload) - end, api_key, correlation_id)
            except DecodeError as e:
                req.error = f"request: {e.reason} at offset {e.offset}"
        if req.error is not None and req.known:
            acc["decode_error"] = acc.get("decode_error", 0) + size
            self._anomaly("decode_error", req.error, st, REQUEST, offset, size, api_key, correlation_id)
        body = req.body
        if body is not None:
            if api_key == PRODUCE:
                req.produce = self._produce_batches(st, req, body)
            req.found = walk(body, REQUEST_FIELDS)
            if api_key == SASL_HANDSHAKE and api_version == 0:
                self._sasl_tokens(st, True)
            if api_key == PRODUCE and body.get("acks") == 0:
                self._emit_frame(st, req, None)
                return
        orphan = st.orphans.pop(correlation_id, None) if st.orphans else None
        if orphan is not None:
            st.orphan_bytes -= len(orphan[2])
            self._answer(st, req, *orphan)
            return
        for lost in st.inflight.add(correlation_id, req):
            self._emit_request_only(st, lost)

    @staticmethod
    def _sasl_tokens(st: ConnState, on: bool) -> None:
        """SaslHandshake v0 is followed by raw size-prefixed SASL tokens (no Kafka header) until the client's next
        real request: they are counted as `sasl_token` bytes, never decoded."""
        st.client_tokens = st.resp_sync.raw_tokens = on
        st.req_sync.min_size = 0 if on else 8
        st.resp_sync.min_size = 0 if on else 4

    def _produce_batches(self, st: ConnState, req: Request, body: dict) -> list:
        out = []
        for name, topic_id, partition, data, _ in bt.produce_partitions(body):
            batches = bt.split(data, True, self._problem(st, REQUEST, req))
            if not batches:
                continue
            topic = name if name is not None else self.topics.resolve(topic_id, "batches")
            out.append((topic, topic_id, partition, batches))
            if self.record_table is not None:
                head = (st.conn_id, req.correlation_id, "produce", req.ts, req.client_id)
                rtopic = name if name is not None else self.topics.resolve(topic_id, "records")
                for batch in batches:
                    for row in bt.record_rows(batch, head, rtopic, partition,
                                              self.payloads, self._problem(st, REQUEST, req)):
                        self.record_table.add(row, _payload_size(row) if self.payloads else 0)
        return out

    # ---- responses --------------------------------------------------------------------------------------------

    def _response(self, st: ConnState, ts: int, offset: int, payload: bytes) -> None:
        acc = st.account[RESPONSE]
        size = len(payload) + 4
        if len(payload) < 4:  # only possible while raw SASL tokens are expected
            acc["sasl_token"] = acc.get("sasl_token", 0) + size
            return
        correlation_id = _I32(payload, 0)[0]
        req, lost = st.inflight.take(correlation_id)
        for old in lost:
            self._emit_request_only(st, old)
        if req is None:
            if st.resp_sync.raw_tokens:
                acc["sasl_token"] = acc.get("sasl_token", 0) + size
            else:
                self._hold_orphan(st, ts, offset, payload, correlation_id)
            return
        self._answer(st, req, ts, offset, payload)

    def _hold_orphan(self, st: ConnState, ts: int, offset: int, payload: bytes, correlation_id: int) -> None:
        """Keep a response whose request has not been seen: the reassembler may still be holding the request back
        behind a hole in the client's direction. Bounded; the oldest are let go as unpaired."""
        old = st.orphans.pop(correlation_id, None)
        if old is not None:
            self._release_orphan(st, correlation_id, old)
        st.orphans[correlation_id] = (ts, offset, payload)
        st.orphan_bytes += len(payload)
        while len(st.orphans) > MAX_ORPHANS or st.orphan_bytes > MAX_ORPHAN_BYTES:
            key = next(iter(st.orphans))
            self._release_orphan(st, key, st.orphans.pop(key))

    def _release_orphan(self, st: ConnState, correlation_id: int, orphan: tuple[int, int, bytes]) -> None:
        ts, _, payload = orphan
        st.orphan_bytes -= len(payload)
        acc = st.account[RESPONSE]
        acc["unpaired_response"] = acc.get("unpaired_response", 0) + len(payload) + 4
        self._emit_response_only(st, ts, len(payload) + 4, correlation_id)

    def _answer(self, st: ConnState, req: Request, ts: int, offset: int, payload: bytes) -> None:
        """Decode a response as the answer to req and emit the pair's rows."""
        acc = st.account[RESPONSE]
        size = len(payload) + 4
        correlation_id = req.correlation_id
        resp = Response(ts, size)
        if not req.known:
            acc["unknown_api"] = acc.get("unknown_api", 0) + size
        else:
            try:
                resp.body, end = decode_answer(req.api_key, req.api_version, payload)
                self._book_decoded(st, RESPONSE, offset, size, len(payload) - end, req.api_key, correlation_id)
            except DecodeError as e:
                resp.error = f"response: {e.reason} at offset {e.offset}"
                acc["decode_error"] = acc.get("decode_error", 0) + size
                self._anomaly("decode_error", resp.error, st, RESPONSE, offset, size, req.api_key, correlation_id)
        body = resp.body
        if body is not None:
            if req.api_key in (FETCH, share.SHARE_FETCH):
                self._fetch_batches(st, req, resp, body)
            if req.api_key == share.SHARE_FETCH:
                self._acquired_rows(st, req, resp, body)
            resp.found = walk(body, ())
            for topic_id, name in resp.found.id_names:
                self.topics.learn(topic_id, name)
        self._emit_frame(st, req, resp)

    def _fetch_batches(self, st: ConnState, req: Request, resp: "Response", body: dict) -> None:
        share_fetch = req.api_key == share.SHARE_FETCH
        direction = "share_fetch" if share_fetch else "fetch"
        offsets = {} if share_fetch else bt.fetch_offsets(req.body)
        group_id = member_id = None
        if share_fetch and req.body is not None:
            group_id, member_id = req.body.get("group_id"), req.body.get("member_id")
        problem = self._problem(st, RESPONSE, req)
        for name, topic_id, partition, data, part in bt.fetch_partitions(body):
            batches = bt.split(data, False, problem)
            if not batches:
                continue
            topic = name if name is not None else self.topics.resolve(topic_id, "batches")
            fetch_offset = offsets.get((name or topic_id, partition))
            hwm = part.get("high_watermark")
            err = part.get("error_code")
            for batch in batches:
                self._batch_row(st, req, resp.ts, direction, group_id, member_id, topic, topic_id, partition, batch,
                                fetch_offset, hwm, None, err)
            if self.record_table is not None:
                head = (st.conn_id, req.correlation_id, direction, resp.ts, req.client_id)
                rtopic = name if name is not None else self.topics.resolve(topic_id, "records")
                for batch in batches:
                    for row in bt.record_rows(batch, head, rtopic, partition, self.payloads, problem):
                        self.record_table.add(row, _payload_size(row) if self.payloads else 0)

    def _batch_row(self, st: ConnState, req: Request, ts: int, direction: str, group_id: str | None,
                   member_id: str | None, topic: str | None, topic_id: str | None, partition: int, batch: Any,
                   fetch_offset: int | None, hwm: int | None, assigned: int | None, err: int | None) -> None:
        self.batches.add((
            st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, direction, ts,
            req.client_id, group_id, member_id, topic, topic_id, partition, batch.magic, batch.base_offset,
            batch.last_offset, batch.record_count, batch.producer_id, batch.producer_epoch, batch.base_sequence,
            bool(batch.attributes & 0x10), bool(batch.attributes & 0x20),
            bt.control_type(batch, self._problem(st, RESPONSE, req)), batch.compression, batch.size,
            bt.ms_to_us(batch.first_timestamp), bt.ms_to_us(batch.max_timestamp), batch.crc_ok, fetch_offset, hwm,
            assigned, err,
        ))

    def _acquired_rows(self, st: ConnState, req: Request, resp: "Response", body: dict) -> None:
        rb = req.body or {}
        for topic_id, partition, first, last, delivery_count, err in share.acquired(body):
            self.share.add((
                st.conn_id, st.client_addr, st.broker_addr, "acquired", req.api_key, req.correlation_id, resp.ts,
                req.client_id, rb.get("group_id"), rb.get("member_id"), rb.get("share_session_epoch"),
                self.topics.resolve(topic_id, "share"), topic_id, partition, first, last, delivery_count, None, err,
            ))

    def _ack_rows(self, st: ConnState, req: Request, resp_body: dict | None) -> None:
        rb = req.body
        errors = share.ack_error_codes(req.api_key, resp_body)
        for topic_id, partition, first, last, ack_type in share.acks(rb):
            self.share.add((
                st.conn_id, st.client_addr, st.broker_addr, "ack", req.api_key, req.correlation_id, req.ts,
                req.client_id, rb.get("group_id"), rb.get("member_id"), rb.get("share_session_epoch"),
                self.topics.resolve(topic_id, "share"), topic_id, partition, first, last, None, ack_type,
                errors.get((topic_id, partition)),
            ))

    # ---- rows -------------------------------------------------------------------------------------------------

    def _book_decoded(self, st: ConnState, direction: int, offset: int, size: int, trailing: int, api_key: int,
                      correlation_id: int) -> None:
        """A decoded message. Bytes after its body (some brokers add an empty tag buffer) are kept out of `decoded`
        and reported: the message still counts as decoded, as Kafka's own clients ignore such bytes."""
        acc = st.account[direction]
        acc["decoded"] += size - trailing
        if trailing:
            acc["trailing_bytes"] = acc.get("trailing_bytes", 0) + trailing
            self._anomaly("trailing_bytes", f"{trailing} bytes after the end of the {DIRECTIONS[direction]} body",
                          st, direction, offset, trailing, api_key, correlation_id)

    def _emit_request_only(self, st: ConnState, req: Request) -> None:
        self._emit_frame(st, req, None, unpaired=True)

    def _emit_frame(self, st: ConnState, req: Request, resp: "Response | None", unpaired: bool = False) -> None:
        name = api_name(req.api_key) or "unknown"
        self.messages[name] = self.messages.get(name, 0) + 1
        rbody = resp.body if resp is not None else None
        if req.produce is not None:
            results = bt.produce_results(rbody)
            for topic, topic_id, partition, batches in req.produce:
                err, assigned = results.get((topic_id if topic_id is not None else topic, partition), (None, None))
                for batch in batches:
                    self._batch_row(st, req, req.ts, "produce", None, None, topic, topic_id, partition, batch, None,
                                    None, assigned, err)
        if req.body is not None and req.api_key in (share.SHARE_FETCH, share.SHARE_ACKNOWLEDGE):
            self._ack_rows(st, req, rbody)
        errors = [e for e in (req.error, resp.error if resp is not None else None) if e]
        if errors:
            status = "decode_error"
        elif not req.known:
            status = "unknown_api"
        elif unpaired:
            status = "unpaired_request"
        else:
            status = "ok"
        qf = req.found.fields if req.found is not None else {}
        rf = top_level(rbody, RESPONSE_FIELDS) if rbody is not None else {}
        topics = self._topic_list(req.found, resp.found if resp is not None else None)
        code = error_code(rbody, resp.found.first_error) if rbody is not None else None
        request_json = to_json(req.body) if req.body is not None else None
        response_json = to_json(rbody) if rbody is not None else None
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.frames.add((
            st.conn_id, st.client_addr, st.broker_addr, req.ts, resp.ts if resp is not None else None,
            resp.ts - req.ts if resp is not None else None, req.api_key, name, req.api_version, req.correlation_id,
            req.client_id, req.size, resp.size if resp is not None else None, code,
            error_name(code) if code is not None else None, status,
            qf.get("group_id"), _set(qf.get("member_id"), rf.get("member_id")), qf.get("group_instance_id"),
            _set(qf.get("generation_id"), rf.get("generation_id")), qf.get("member_epoch"), rf.get("member_epoch"),
            _set(qf.get("group_epoch"), rf.get("group_epoch")), qf.get("share_session_epoch"),
            _set(qf.get("producer_id"), rf.get("producer_id")), _set(qf.get("producer_epoch"), rf.get("producer_epoch")),
            qf.get("transactional_id"), topics, rf.get("throttle_time_ms"), "; ".join(errors) or None,
            request_json, response_json,
        ), len(request_json or "") + len(response_json or ""))

    def _emit_response_only(self, st: ConnState, ts: int, size: int, correlation_id: int) -> None:
        self.messages["unknown"] = self.messages.get("unknown", 0) + 1
        self.statuses["unpaired_response"] = self.statuses.get("unpaired_response", 0) + 1
        self.frames.add((
            st.conn_id, st.client_addr, st.broker_addr, None, ts, None, None, "unknown", None, correlation_id, None,
            None, size, None, None, "unpaired_response", None, None, None, None, None, None, None, None, None, None,
            None, None, None, "request not captured: api unknown, response kept raw (not decoded)", None, None,
        ))

    def _topic_list(self, qfound: Any, rfound: Any) -> list[str] | None:
        out: dict[str, None] = {}
        for found in (qfound, rfound):
            if found is None:
                continue
            for name in found.topics:
                out[name] = None
            for topic_id in found.topic_ids:
                out[self.topics.resolve(topic_id, "frames")] = None
        return list(out) if out else None

    def _problem(self, st: ConnState, direction: int, req: Request):
        def problem(kind: str, detail: str, nbytes: int) -> None:
            self._anomaly(kind, detail, st, direction, None, nbytes, req.api_key, req.correlation_id)
        return problem

    def _anomaly(self, kind: str, detail: str, st: ConnState, direction: int | None, offset: int | None,
                 nbytes: int, api_key: int | None = None, correlation_id: int | None = None) -> None:
        self._row_anomaly(kind, detail, self.where, st.conn_id, direction, offset, nbytes, api_key, correlation_id)

    def _row_anomaly(self, kind: str, detail: str, where: Where, conn_id: str | None, direction: int | None,
                     offset: int | None, nbytes: int, api_key: int | None = None,
                     correlation_id: int | None = None) -> None:
        self.anomaly_counts[kind] = self.anomaly_counts.get(kind, 0) + 1
        self.anomalies.add((
            kind, detail, where.capture_file or None,
            where.packet_index if where.packet_index is not None and where.packet_index >= 0 else None,
            where.ts_us or None, conn_id, DIRECTIONS[direction] if direction is not None else None, offset, nbytes,
            api_key, correlation_id,
        ))

    def _close_stream(self, st: ConnState) -> None:
        for direction in (REQUEST, RESPONSE):
            acc = st.account[direction]
            skipped = {k: v for k, v in acc.items() if k not in ("seen", "decoded")}
            self.streams.append({
                "conn_id": st.conn_id, "direction": DIRECTIONS[direction], "seen": acc["seen"],
                "decoded": acc["decoded"], "skipped": skipped, "lost_in_gaps": st.gaps[direction],
            })


class Response:
    __slots__ = ("ts", "size", "body", "found", "error")

    def __init__(self, ts: int, size: int) -> None:
        self.ts = ts
        self.size = size
        self.body: dict | None = None
        self.found: Any = None
        self.error: str | None = None


SKIP_DETAIL = {
    "resync": "bytes skipped while searching for the next plausible frame (after a gap, a bad size or mid-stream)",
    "frame_lost_in_gap": "part of a frame that a capture gap cut: the frame cannot be decoded",
    "oversize_frame": "a frame larger than the 100 MiB buffering cap, skipped by count",
    "truncated_frame": "a frame cut short by the end of the connection or capture",
}


def _set(first: Any, fallback: Any) -> Any:
    """The request's value unless it is a placeholder (None, '' or -1), else the response's."""
    return fallback if first is None or first == "" or first == -1 else first


def _payload_size(row: tuple) -> int:
    return len(row[-1] or b"") + len(row[-2] or b"")
