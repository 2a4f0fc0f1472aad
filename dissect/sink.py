"""The dissector's StreamSink: TCP byte streams in, Parquet rows out.

Per connection it decides whether the stream is Kafka (a configured port, or request-shaped first bytes) and which
side is the client, frames each direction (`framing`), decodes and pairs requests with responses (`pairing`), and
turns them into frames/, batches/, records/, share/ and anomalies/ rows. Every byte a direction delivers is booked
once, as decoded or skipped-with-a-reason, so the summary can prove nothing was silently dropped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from kafkatap.dissect import batches as bt
from kafkatap.dissect import consumer_protocol as cp
from kafkatap.dissect import share
from kafkatap.dissect.classify import PROBE_LIMIT, classify
from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.extract import REQUEST_FIELDS, Found, walk
from kafkatap.dissect.framing import YES, Framer
from kafkatap.dissect.plausible import decode_answer, request_check
from kafkatap.dissect.protocol import api_name, decode_request, decode_request_header, is_known, response_header_version
from kafkatap.dissect.protocol.codec import decoder
from kafkatap.dissect.reassembly import Conn, Where
from kafkatap.dissect.rows import Problem, Rows
from kafkatap.dissect.state import DIRECTIONS, REQUEST, RESPONSE, ConnState, Request, Response, endpoint
from kafkatap.dissect.topics import TopicNames
from kafkatap.dissect.writer import Output

_HEAD = struct.Struct(">hhi").unpack_from
_I32 = struct.Struct(">i").unpack_from
_SIZE = struct.Struct(">i").pack

PRODUCE, FETCH, SASL_HANDSHAKE = 0, 1, 17
MAX_ORPHANS = 64
MAX_ORPHAN_BYTES = 16 << 20
"""Responses held per connection while their request may still come (as much as the reassembler holds back)."""

NOT_ANOMALIES = frozenset({"sasl_token"})
"""Skip reasons that are normal protocol, counted in the byte account but not reported as anomalies."""

_KNOWN: dict[tuple[int, int], bool] = {}
"""is_known by (api_key, api_version): asked once per request, so worth a dict instead of a range scan."""
_ANSWERS: dict[tuple[int, int], tuple[bool, Callable]] = {}
"""(flexible response header, compiled body decoder) by (api_key, api_version) of the request answered."""


def _decode_answer(api_key: int, api_version: int, frame: bytes) -> tuple[dict, int]:
    """`decode_answer` with the response header skipped inline in the usual case (v0 header, or a flexible one with
    no tagged fields), so each response costs one compiled decoder call. Anything else, a decode error included,
    goes through `decode_answer`, which gives the same body or raises the same error (and knows the ApiVersions
    fallback)."""
    answer = _ANSWERS.get((api_key, api_version))
    if answer is None:
        answer = _ANSWERS[(api_key, api_version)] = (response_header_version(api_key, api_version) == 1,
                                                     decoder(api_key, api_version, True))
    flexible, decode = answer
    if not flexible:
        pos = 4
    elif len(frame) > 4 and frame[4] == 0:
        pos = 5
    else:
        return decode_answer(api_key, api_version, frame)
    try:
        return decode(frame, pos)
    except DecodeError:
        return decode_answer(api_key, api_version, frame)


class Sink:
    """Implements dissect.reassembly.StreamSink."""

    def __init__(self, out: Output, ports: set[int], *, records: bool, payloads: bool,
                 part: tuple[int, int] = (0, 1)) -> None:
        self.part, self.parts = part  # this sink handles the connections whose key hashes to `part` of `parts`
        self.ports = ports
        self.records = records
        self.topics = TopicNames()
        self.consumer = cp.ConsumerProtocol()
        self.rows = Rows(out, self.topics, records=records, payloads=payloads)
        self.where = Where("", -1, 0)
        self.streams: list[dict] = []  # byte account of every closed Kafka stream
        self.connections = {"kafka": 0, "tls": 0, "not_kafka": 0}
        self.warnings: list[str] = []

    # ---- StreamSink -------------------------------------------------------------------------------------------

    def on_open(self, conn: Conn) -> None:
        conn.state = ConnState()
        if self.parts > 1 and self._owner(conn) != self.part:
            conn.state.kind = "foreign"  # another worker's connection: on_data drops it at once

    def _owner(self, conn: Conn) -> int:
        return hash(conn.conn_key) % self.parts

    def on_data(self, conn: Conn, side: int, ts_us: int, data: bytes, where: Where) -> bool:
        st: ConnState = conn.state
        self.where = where
        kind = st.kind
        if kind == "kafka":
            self._feed(conn, st, side, ts_us, data)
            return True
        if kind == "ignored" or kind == "foreign":
            return False
        if kind == "tls":
            acc = st.account[REQUEST if side == st.client_side else RESPONSE]
            acc["seen"] += len(data)
            acc["tls"] = acc.get("tls", 0) + len(data)
            return True
        st.probe.append((side, ts_us, data, where))
        st.probe_bytes += len(data)
        verdict, st.client_side = classify(conn, st.probe, self.ports)
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
        if st is None or st.kind == "foreign":
            return
        if st.kind == "probe":
            verdict, st.client_side = classify(conn, st.probe, self.ports, final=True)
            self._start(conn, st, verdict)
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
        if self.parts > 1 and (self._owner(conn) if conn is not None else 0) != self.part:
            return  # reported by the worker owning the connection (file-level problems: by worker 0)
        st = conn.state if conn is not None else None
        direction = None
        if st is not None and st.client_side is not None and side is not None:
            direction = REQUEST if side == st.client_side else RESPONSE
        if kind == "bad_capture_file":
            self.warnings.append(detail)
        self.rows.anomaly(kind, detail, where, st.conn_id if st is not None else None, direction, None, nbytes)

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
        st.client_addr, st.broker_addr = endpoint(addr[client]), endpoint(addr[1 - client])
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
        self.rows.anomaly(reason, SKIP_DETAIL.get(reason, reason), where, st.conn_id, direction, offset, nbytes)

    def _feed(self, conn: Conn, st: ConnState, side: int, ts: int, data: bytes) -> None:
        if side == st.client_side:
            st.account[REQUEST]["seen"] += len(data)
            frames = st.framers[side].feed(ts, data)
            if frames:
                if st.skip_run[REQUEST] is not None:
                    self._flush_skip(st, REQUEST)
                for ts_f, offset, payload in frames:
                    self._request(st, ts_f, offset, payload)
        else:
            st.account[RESPONSE]["seen"] += len(data)
            frames = st.framers[side].feed(ts, data)
            if frames:
                if st.skip_run[RESPONSE] is not None:
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
        known = _KNOWN.get((api_key, api_version))
        if known is None:
            known = _KNOWN[(api_key, api_version)] = is_known(api_key, api_version)
        if not known:
            req.known = False
            acc["unknown_api"] = acc.get("unknown_api", 0) + size
            self._anomaly("unknown_api", f"api key {api_key} version {api_version} is not in the schemas", st,
                          REQUEST, offset, size, api_key, correlation_id)
        elif pos >= 0:
            try:
                req.body, end = decode_request(api_key, api_version, payload, pos)
                if end == len(payload):
                    acc["decoded"] += size
                else:
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
            pending = self.consumer.pending(api_key, body, None) if api_key in cp.APIS else None
            req.found = walk(body, REQUEST_FIELDS)
            if pending is not None:
                self._consumer_protocol(st, req, REQUEST, pending, req.found)
            if api_key == SASL_HANDSHAKE and api_version == 0:
                self._sasl_tokens(st, True)
            if api_key == PRODUCE and body.get("acks") == 0:
                self.rows.frame(st, req, None, self._problem(st, REQUEST, req))
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
            if self.records:
                head = (st.conn_id, req.correlation_id, "produce", req.ts, req.client_id)
                rtopic = name if name is not None else self.topics.resolve(topic_id, "records")
                self.rows.record_rows(batches, head, rtopic, partition, self._problem(st, REQUEST, req))
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
        self.rows.response_only(st, ts, len(payload) + 4, correlation_id)

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
                resp.body, end = _decode_answer(req.api_key, req.api_version, payload)
                if end == len(payload):
                    acc["decoded"] += size
                else:
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
                self.rows.acquired(st, req, resp, body)
            pending = (self.consumer.pending(req.api_key, body, req.body or {}) if req.api_key in cp.APIS
                       else None)
            resp.found = walk(body, ())
            if pending is not None:
                self._consumer_protocol(st, req, RESPONSE, pending, resp.found)
            for topic_id, name in resp.found.id_names:
                self.topics.learn(topic_id, name)
        self.rows.frame(st, req, resp, self._problem(st, RESPONSE, req))

    def _fetch_batches(self, st: ConnState, req: Request, resp: Response, body: dict) -> None:
        share_fetch = req.api_key == share.SHARE_FETCH
        direction = "share_fetch" if share_fetch else "fetch"
        offsets = {} if share_fetch else bt.fetch_offsets(req.body)
        group_id = member_id = None
        if share_fetch and req.body is not None:
            group_id, member_id = req.body.get("group_id"), req.body.get("member_id")
        problem = self._problem(st, RESPONSE, req)
        carrier = (st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, direction,
                   resp.ts, req.client_id, group_id, member_id)
        for name, topic_id, partition, data, part in bt.fetch_partitions(body):
            batches = bt.split(data, False, problem)
            if not batches:
                continue
            topic = name if name is not None else self.topics.resolve(topic_id, "batches")
            tail = (offsets.get((name or topic_id, partition)), part.get("high_watermark"), None,
                    part.get("error_code"))
            self.rows.batches.extend(bt.batch_rows(carrier + (topic, topic_id, partition), batches, tail, problem))
            if self.records:
                head = (st.conn_id, req.correlation_id, direction, resp.ts, req.client_id)
                rtopic = name if name is not None else self.topics.resolve(topic_id, "records")
                self.rows.record_rows(batches, head, rtopic, partition, problem)

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

    def _consumer_protocol(self, st: ConnState, req: Request, direction: int, pending: cp.Pending,
                           found: Found) -> None:
        """Decode the consumer protocol bytes of a walked JoinGroup / SyncGroup; bytes that should be the consumer
        protocol but do not decode become anomalies (the message itself decoded: its status stays ok)."""
        for spot, exc in cp.finish(pending, found):
            detail = (f"{api_name(req.api_key)} v{req.api_version} {DIRECTIONS[direction]} {spot.label}: consumer "
                      f"protocol {spot.kind} does not decode: {exc}")
            self._anomaly(cp.ANOMALY, detail, st, direction, None, len(spot.raw), req.api_key, req.correlation_id)

    def _emit_request_only(self, st: ConnState, req: Request) -> None:
        self.rows.frame(st, req, None, self._problem(st, REQUEST, req), unpaired=True)

    def _problem(self, st: ConnState, direction: int, req: Request) -> Problem:
        def problem(kind: str, detail: str, nbytes: int) -> None:
            self._anomaly(kind, detail, st, direction, None, nbytes, req.api_key, req.correlation_id)
        return problem

    def _anomaly(self, kind: str, detail: str, st: ConnState, direction: int | None, offset: int | None,
                 nbytes: int, api_key: int | None = None, correlation_id: int | None = None) -> None:
        self.rows.anomaly(kind, detail, self.where, st.conn_id, direction, offset, nbytes, api_key, correlation_id)

    def _close_stream(self, st: ConnState) -> None:
        for direction in (REQUEST, RESPONSE):
            acc = st.account[direction]
            skipped = {k: v for k, v in acc.items() if k not in ("seen", "decoded")}
            self.streams.append({
                "conn_id": st.conn_id, "direction": DIRECTIONS[direction], "seen": acc["seen"],
                "decoded": acc["decoded"], "skipped": skipped, "lost_in_gaps": st.gaps[direction],
            })


SKIP_DETAIL = {
    "resync": "bytes skipped while searching for the next plausible frame (after a gap, a bad size or mid-stream)",
    "frame_lost_in_gap": "part of a frame that a capture gap cut: the frame cannot be decoded",
    "oversize_frame": "a frame larger than the 100 MiB buffering cap, skipped by count",
    "truncated_frame": "a frame cut short by the end of the connection or capture",
}
