"""The request/response exchange of Kafka connections: each frame decoded, every response paired with its request by
correlation id, every byte booked in the connection's account, and the messages handed on through `Messages`.

A response can only be decoded through its request's api key and version. One whose request was not seen waits in
`orphans` (the request may come late, from behind a hole the reassembler is holding); requests wait in `inflight`.
Bodies are read with `bodies.read_request` / `read_response` (or their compiled twins). With the compiled core, the
usual request and response do not come through these methods at all: _exchange.pyx handles them and hands the rest
here.
"""

from __future__ import annotations

import struct

from kafkatap.dissect import native
from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.kafka import bodies
from kafkatap.dissect.kafka import consumer_protocol as cp
from kafkatap.dissect.kafka.bodies import WANTED, Body, walked
from kafkatap.dissect.kafka.extract import Found, walk
from kafkatap.dissect.kafka.messages import Messages
from kafkatap.dissect.kafka.orphans import Orphan
from kafkatap.dissect.kafka.state import DIRECTIONS, REQUEST, RESPONSE, ConnState, Request, Response
from kafkatap.dissect.kafka.topics import TopicNames
from kafkatap.dissect.protocol import api_name, decode_request_header, is_known
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.streams.reassembly import Where

_HEAD = struct.Struct(">hhi").unpack_from
_I32 = struct.Struct(">i").unpack_from


_KNOWN: dict[tuple[int, int], bool] = {}
"""is_known by (api_key, api_version): asked once per request, so worth a dict instead of a range scan."""
_compiled = native.extension("kafkatap.dissect.kafka._bodies")
_fast_paths = native.extension("kafkatap.dissect.kafka._exchange")
_Base: type = _fast_paths.ExchangeFields if native.compiled and _fast_paths is not None else object


class Exchange(_Base):  # type: ignore[valid-type, misc]
    """Decodes and pairs the frames of a sink's Kafka connections (each connection's own state is its ConnState)."""

    # With the compiled core `out` is a C struct member of the compiled base (which the compiled fast paths read for
    # every message); without it, a slot.
    __slots__ = ("topics", "consumer", "read_request", "read_response") + (("out",) if _Base is object else ())

    def __init__(self, out: Messages, topics: TopicNames) -> None:
        self.out = out
        self.topics = topics
        self.consumer = cp.ConsumerProtocol()
        self.read_request = native.pick(bodies.read_request, _compiled)  # chosen once per run, not per message
        self.read_response = native.pick(bodies.read_response, _compiled)

    def request(self, st: ConnState, at: Where, offset: int, payload: bytes, where: Where) -> None:
        """A frame of the client's direction (payload after the size prefix, which starts at stream offset), whose
        first byte came with the packet `at`; `where` is the packet being handled (where problems are reported)."""
        size = len(payload) + 4
        if st.sasl.expected and st.sasl.is_token(payload):
            st.account.skipped(REQUEST, "sasl_token", size)
            return
        if len(payload) < 8:
            st.account.skipped(REQUEST, "malformed_header", size)
            self._anomaly(st, "malformed_header", f"a {size}-byte frame is too short for a request header", where,
                          REQUEST, offset, size)
            return
        api_key, api_version, correlation_id = _HEAD(payload, 0)
        st.req_sync.last_correlation_id = correlation_id
        st.seq += 1
        req = Request(st.seq, at, size, api_key, api_version, correlation_id)
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
            st.account.skipped(REQUEST, "unknown_api", size)
            self._anomaly(st, "unknown_api", f"api key {api_key} version {api_version} is not in the schemas", where,
                          REQUEST, offset, size, api_key, correlation_id)
        elif pos >= 0:
            try:
                req.body = self.read_request(api_key, api_version, payload, pos)
                self._book_decoded(st, REQUEST, offset, size, len(payload) - req.body.end, req, where)
            except DecodeError as e:
                req.error = f"request: {e.reason} at offset {e.offset}"
        if req.error is not None and req.known:
            st.account.skipped(REQUEST, "decode_error", size)
            self._anomaly(st, "decode_error", req.error, where, REQUEST, offset, size, api_key, correlation_id)
        body = req.body
        if body is not None:
            self.out.request(st, req, where)
            if body.json is None:
                req.body = body = self._walk(st, req, REQUEST, body, None, where)
            st.sasl.after_request(api_key, api_version)
            if api_key == ApiKey.PRODUCE and body.top.get("acks") == 0:
                self.out.frame(st, req, None, where)
                return
        orphan = st.orphans.take(correlation_id)
        if orphan is not None:
            self._answer(st, req, *orphan, where)
            return
        for lost in st.inflight.add(correlation_id, req):
            self.out.frame(st, lost, None, where, unpaired=True)

    def response(self, st: ConnState, at: Where, offset: int, payload: bytes, where: Where) -> None:
        """A frame of the broker's direction: answered at once if its request is waiting, else held."""
        size = len(payload) + 4
        if len(payload) < 4:  # only possible while raw SASL tokens are expected
            st.account.skipped(RESPONSE, "sasl_token", size)
            return
        correlation_id = _I32(payload, 0)[0]
        req, lost = st.inflight.take(correlation_id)
        for old in lost:
            self.out.frame(st, old, None, where, unpaired=True)
        if req is None:
            if st.sasl.expected:
                st.account.skipped(RESPONSE, "sasl_token", size)
                return
            for held, orphan in st.orphans.hold(correlation_id, (at, offset, payload)):
                self._let_go(st, held, orphan)
            return
        self._answer(st, req, at, offset, payload, where)

    def close(self, st: ConnState, where: Where) -> None:
        """The connection ended: requests still waiting are unpaired, responses still held are let go."""
        for request in st.inflight.drain():
            self.out.frame(st, request, None, where, unpaired=True)
        for correlation_id, orphan in st.orphans.drain():
            self._let_go(st, correlation_id, orphan)

    def _answer(self, st: ConnState, req: Request, at: Where, offset: int, payload: bytes, where: Where) -> None:
        """Decode a response as the answer to req and hand the pair on."""
        size = len(payload) + 4
        resp = Response(at, size)
        if not req.known:
            st.account.skipped(RESPONSE, "unknown_api", size)
        else:
            try:
                resp.body = self.read_response(req.api_key, req.api_version, payload)
                self._book_decoded(st, RESPONSE, offset, size, len(payload) - resp.body.end, req, where)
            except DecodeError as e:
                resp.error = f"response: {e.reason} at offset {e.offset}"
                st.account.skipped(RESPONSE, "decode_error", size)
                self._anomaly(st, "decode_error", resp.error, where, RESPONSE, offset, size, req.api_key,
                              req.correlation_id)
        body = resp.body
        if body is not None:
            self.out.response(st, req, resp, where)
            if body.json is None:
                asked = req.body.message if req.body is not None else {}
                resp.body = body = self._walk(st, req, RESPONSE, body, asked, where)
            for topic_id, name in body.found.id_names:
                self.topics.learn(topic_id, name)
        self.out.frame(st, req, resp, where)

    def _walk(self, st: ConnState, req: Request, direction: int, body: Body, asked: dict | None,
              where: Where) -> Body:
        """Walk the message of a body read with its dicts (bodies.DICT_APIS), decoding the consumer protocol bytes
        of a JoinGroup / SyncGroup first (asked: the request's message, for a response)."""
        message = body.message
        pending = self.consumer.pending(req.api_key, message, asked) if req.api_key in cp.APIS else None
        found = walk(message, WANTED[direction])
        if pending is not None:
            self._consumer_protocol(st, req, direction, pending, found, where)
        return walked(body, found, direction == RESPONSE)

    def _let_go(self, st: ConnState, correlation_id: int, orphan: Orphan) -> None:
        """A held response whose request never came: unpaired, and undecoded (its api is unknown)."""
        size = len(orphan[2]) + 4
        st.account.skipped(RESPONSE, "unpaired_response", size)
        self.out.response_only(st, orphan[0], size, correlation_id)

    def _book_decoded(self, st: ConnState, direction: int, offset: int, size: int, trailing: int, req: Request,
                      where: Where) -> None:
        """A decoded message. Bytes after its body (some brokers add an empty tag buffer) are kept out of `decoded`
        and reported: the message still counts as decoded, as Kafka's own clients ignore such bytes."""
        st.account.decoded(direction, size - trailing)
        if trailing:
            st.account.skipped(direction, "trailing_bytes", trailing)
            self._anomaly(st, "trailing_bytes", f"{trailing} bytes after the end of the {DIRECTIONS[direction]} body",
                          where, direction, offset, trailing, req.api_key, req.correlation_id)

    def _consumer_protocol(self, st: ConnState, req: Request, direction: int, pending: cp.Pending, found: Found,
                           where: Where) -> None:
        """Decode the consumer protocol bytes of a walked JoinGroup / SyncGroup; bytes that should be the consumer
        protocol but do not decode become anomalies (the message itself decoded: its status stays ok)."""
        for spot, exc in cp.finish(pending, found):
            detail = (f"{api_name(req.api_key)} v{req.api_version} {DIRECTIONS[direction]} {spot.label}: consumer "
                      f"protocol {spot.kind} does not decode: {exc}")
            self._anomaly(st, cp.ANOMALY, detail, where, direction, None, len(spot.raw), req.api_key,
                          req.correlation_id)

    def _anomaly(self, st: ConnState, kind: str, detail: str, where: Where, direction: int, offset: int | None,
                 nbytes: int, api_key: int | None = None, correlation_id: int | None = None) -> None:
        self.out.anomaly(kind, detail, where, st.conn_id, direction, offset, nbytes, api_key, correlation_id)
