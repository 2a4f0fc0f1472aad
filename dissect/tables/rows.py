"""Rows of the output tables, built from the Kafka layer's messages: frames/, batches/, records/, share/ and
anomalies/. `Rows` is the Kafka layer's `kafka.messages.Messages`.

Rows are tuples in the column order of dissect/tables/schema.py (the writer transposes them into Arrow columns); a
frames/ row is laid out by frames_row.frame_row only, which the compiled twins (_rows.pyx) call too.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from kafkatap.dissect import native
from kafkatap.dissect.anomalies import KINDS
from kafkatap.dissect.kafka import share
from kafkatap.dissect.kafka.bodies import Body
from kafkatap.dissect.kafka.extract import error_code
from kafkatap.dissect.kafka.state import DIRECTIONS, REQUEST, RESPONSE, ConnState, Request, Response
from kafkatap.dissect.kafka.topics import TopicNames
from kafkatap.dissect.protocol import api_name, error_name
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.streams.reassembly import Conn, Where
from kafkatap.dissect.tables import batches as bt
from kafkatap.dissect.tables.batch_row import batch_rows
from kafkatap.dissect.tables.batches import Problem
from kafkatap.dissect.tables.frames_row import NO_ENTITIES, frame_row
from kafkatap.dissect.tables.writer import Output

_compiled = native.extension("kafkatap.dissect.tables._rows")


_Base: type = _compiled.RowsFields if native.compiled and _compiled is not None else object


class Rows(_Base):  # type: ignore[valid-type, misc]
    """The table writers of one run (or worker), and the counts the summary reports. With the compiled core, the
    fields every message's rows read are C struct members of the compiled base."""

    def __init__(self, out: Output, topics: TopicNames, *, records: bool, payloads: bool) -> None:
        self.topics = topics
        self.payloads = payloads
        self.frames = out["frames"]
        self.batches = out["batches"]
        self.share = out["share"]
        self.anomalies = out["anomalies"]
        self.connections = out["connections"]
        self.records = out["records"] if records else None
        self.messages: dict[str, int] = {}
        self.statuses: dict[str, int] = {}
        self.anomaly_counts: dict[str, int] = {}
        # Messages' request, response and frame: this module's functions, or their compiled twins (_rows.pyx)
        picked = native.pick(request, _compiled)
        self.request = partial(picked, self)
        self.response = partial(native.pick(response, _compiled), self)
        self.frame = partial(native.pick(frame, _compiled), self)
        if _Base is not object:  # the compiled exchange calls the compiled twins in C when they are the ones picked
            self.compiled = picked is not request

    def produce_batches(self, st: ConnState, req: Request, rbody: Body | None, problem: Problem) -> None:
        """batches/ rows of a Produce request, with the error and base offset its response assigned."""
        results = bt.produce_results(rbody.rows) if rbody is not None else {}
        head = (st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, "produce", req.ts,
                req.client_id, None, None)
        for topic, topic_id, partition, batches, prints in req.produce:
            err, assigned = results.get((topic_id if topic_id is not None else topic, partition), (None, None))
            self.batches.extend(batch_rows(head + (topic, topic_id, partition), batches, (None, None, assigned, err),
                                           problem, prints))

    def response_only(self, st: ConnState, at: Where, size: int, correlation_id: int) -> None:
        """A response whose request the capture does not hold: its api is unknown, so it stays undecoded."""
        self.messages["unknown"] = self.messages.get("unknown", 0) + 1
        self.statuses["unpaired_response"] = self.statuses.get("unpaired_response", 0) + 1
        capture_file, packet_index, ts = at
        self.frames.add(frame_row(
            st.conn_id, st.client_addr, st.broker_addr, None, ts, None, "unknown", None, correlation_id, None, None,
            size, None, None, "unpaired_response", NO_ENTITIES, None, None,
            "request not captured: api unknown, response kept raw (not decoded)", None, None, st.tls_version, None,
            None, capture_file, packet_index + 1))

    def topic_list(self, qfound: Any, rfound: Any) -> tuple[str, ...] | None:
        """A tuple, not a list: a row of atoms only is dropped from the garbage collector's tracking, which keeps
        its collections cheap while a row group is buffered."""
        if qfound is not None and rfound is not None and not qfound.topic_ids and not rfound.topic_ids:
            return tuple(dict.fromkeys(qfound.topics + rfound.topics)) or None  # the usual case: names only
        out: dict[str, None] = {}
        for found in (qfound, rfound):
            if found is None:
                continue
            if found.topics:
                out.update(dict.fromkeys(found.topics))
            for topic_id in found.topic_ids:
                out[self.topics.resolve(topic_id, "frames")] = None
        return tuple(out) if out else None

    def record_rows(self, batches: list, head: tuple, topic: str | None, partition: int,
                    problem: Problem) -> list[int | None]:
        """Write the records/ rows of a partition's batches; their fingerprints, in the batches' order."""
        prints = []
        for batch in batches:
            rows, fingerprint = bt.record_rows(batch, head, topic, partition, self.payloads, problem)
            prints.append(fingerprint)
            for row in rows:
                self.records.add(row, len(row[-1] or b"") + len(row[-2] or b"") if self.payloads else 0)
        return prints

    def _produce_request(self, st: ConnState, req: Request, partitions: list[tuple], problem: Problem) -> list:
        """(topic, topic_id, partition, batches, fingerprints or None) of each partition carrying record data."""
        out = []
        for name, topic_id, partition, data in partitions:
            batches = bt.split(data, True, problem)
            if not batches:
                continue
            topic = name if name is not None else self.topics.resolve(topic_id, "batches")
            prints = None
            if self.records is not None:
                head = (st.conn_id, req.correlation_id, "produce", req.ts, req.client_id)
                rtopic = name if name is not None else self.topics.resolve(topic_id, "records")
                prints = self.record_rows(batches, head, rtopic, partition, problem)
            out.append((topic, topic_id, partition, batches, prints))
        return out

    def _fetch_response(self, st: ConnState, req: Request, resp: Response, problem: Problem) -> None:
        """batches/ rows, and records/ rows if asked, of a Fetch or ShareFetch response."""
        share_fetch = req.api_key == ApiKey.SHARE_FETCH
        direction = "share_fetch" if share_fetch else "fetch"
        offsets = {} if share_fetch or req.body is None else bt.fetch_offsets(req.body.rows)
        group_id = member_id = None
        if share_fetch and req.body is not None:
            group_id, member_id = req.body.message.get("group_id"), req.body.message.get("member_id")
        carrier = (st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, direction,
                   resp.ts, req.client_id, group_id, member_id)
        for name, topic_id, partition, data, high_watermark, partition_error in resp.body.rows:
            batches = bt.split(data, False, problem)
            if not batches:
                continue
            topic = name if name is not None else self.topics.resolve(topic_id, "batches")
            tail = (offsets.get((name or topic_id, partition)), high_watermark, None, partition_error)
            prints = None
            if self.records is not None:
                head = (st.conn_id, req.correlation_id, direction, resp.ts, req.client_id)
                rtopic = name if name is not None else self.topics.resolve(topic_id, "records")
                prints = self.record_rows(batches, head, rtopic, partition, problem)
            self.batches.extend(batch_rows(carrier + (topic, topic_id, partition), batches, tail, problem, prints))

    def acquired(self, st: ConnState, req: Request, resp: Response, body: dict) -> None:
        rb = req.body.message if req.body is not None else {}
        for topic_id, partition, first, last, delivery_count, err in share.acquired(body):
            self.share.add((
                st.conn_id, st.client_addr, st.broker_addr, "acquired", req.api_key, req.correlation_id, resp.ts,
                req.client_id, rb.get("group_id"), rb.get("member_id"), rb.get("share_session_epoch"),
                self.topics.resolve(topic_id, "share"), topic_id, partition, first, last, delivery_count, None, err,
            ))

    def acks(self, st: ConnState, req: Request, resp_body: Body | None) -> None:
        rb = req.body.message
        errors = share.ack_error_codes(req.api_key, resp_body.message if resp_body is not None else None)
        for topic_id, partition, first, last, ack_type in share.acks(rb):
            self.share.add((
                st.conn_id, st.client_addr, st.broker_addr, "ack", req.api_key, req.correlation_id, req.ts,
                req.client_id, rb.get("group_id"), rb.get("member_id"), rb.get("share_session_epoch"),
                self.topics.resolve(topic_id, "share"), topic_id, partition, first, last, None, ack_type,
                errors.get((topic_id, partition)),
            ))

    def connection(self, conn: Conn, conn_id: str, client_addr: str, broker_addr: str, closed_by: str) -> None:
        self.connections.add((
            conn_id, client_addr, broker_addr, conn.first_ts_us, closed_by, conn.handshake_rtt_us,
            conn.retransmissions, conn.out_of_order, conn.resets, conn.zero_windows,
        ))

    def anomaly(self, kind: str, detail: str, where: Where, conn_id: str | None, direction: int | None,
                offset: int | None, nbytes: int, api_key: int | None = None,
                correlation_id: int | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"anomaly kind {kind!r} is not declared in dissect/anomalies.py")
        self.anomaly_counts[kind] = self.anomaly_counts.get(kind, 0) + 1
        self.anomalies.add((
            kind, detail, where.capture_file or None,
            where.packet_index if where.packet_index is not None and where.packet_index >= 0 else None,
            where.ts_us or None, conn_id, DIRECTIONS[direction] if direction is not None else None, offset, nbytes,
            api_key, correlation_id,
        ))

    def _problem(self, st: ConnState, direction: int, req: Request, where: Where) -> Problem:
        """An anomaly reporter for the record data of req's exchange."""
        def problem(kind: str, detail: str, nbytes: int) -> None:
            self.anomaly(kind, detail, where, st.conn_id, direction, None, nbytes, req.api_key, req.correlation_id)
        return problem


def request(rows: Rows, st: ConnState, req: Request, where: Where) -> None:
    """A Produce's record data: its batches wait in the request for the response's offsets, its records/ rows are
    written now."""
    if req.api_key == ApiKey.PRODUCE:
        req.produce = rows._produce_request(st, req, req.body.rows, rows._problem(st, REQUEST, req, where))


def response(rows: Rows, st: ConnState, req: Request, resp: Response, where: Where) -> None:
    """A Fetch's or ShareFetch's record data, and the ranges a ShareFetch acquired."""
    if req.api_key in bt.FETCHES:
        rows._fetch_response(st, req, resp, rows._problem(st, RESPONSE, req, where))
    if req.api_key == ApiKey.SHARE_FETCH:
        rows.acquired(st, req, resp, resp.body.message)


def frame(rows: Rows, st: ConnState, req: Request, resp: Response | None, where: Where,
          unpaired: bool = False) -> None:
    """The frames/ row of a request and its response (or of a request alone), with the rows that waited for the
    pair: a Produce's batches (they carry the offsets the response assigned) and share acknowledgements."""
    name = api_name(req.api_key) or "unknown"
    rows.messages[name] = rows.messages.get(name, 0) + 1
    qbody = req.body
    if resp is None:
        rbody = resp_ts = resp_size = resp_error = resp_file = resp_packet = None
    else:
        rbody, resp_ts, resp_size, resp_error = resp.body, resp.ts, resp.size, resp.error
        resp_file, resp_packet = resp.capture_file, resp.packet
    if req.produce is not None:
        rows.produce_batches(st, req, rbody, rows._problem(st, REQUEST if resp is None else RESPONSE, req, where))
    if qbody is not None and req.api_key in share.SHARE_APIS:
        rows.acks(st, req, rbody)
    errors = None
    if req.error or resp_error:
        status = "decode_error"
        errors = "; ".join(e for e in (req.error, resp_error) if e)
    elif not req.known:
        status = "unknown_api"
    elif unpaired:
        status = "unpaired_request"
    else:
        status = "ok"
    rows.statuses[status] = rows.statuses.get(status, 0) + 1
    if qbody is None:
        qfound = request_json = None
        qf = _EMPTY
    else:
        qfound, request_json = qbody.found, qbody.json
        qf = qfound.fields
    if rbody is None:
        rf = _EMPTY
        rfound = code = error = response_json = None
    else:
        rf, rfound, response_json = rbody.top, rbody.found, rbody.json
        code = error_code(rf, rfound)
        error = error_name(code) if code is not None else None
    rows.frames.add(frame_row(
        st.conn_id, st.client_addr, st.broker_addr, req.ts, resp_ts, req.api_key, name, req.api_version,
        req.correlation_id, req.client_id, req.size, resp_size, code, error, status,
        _entities(qf, rf) if qf or len(rf) > ("throttle_time_ms" in rf) + ("error_code" in rf) else NO_ENTITIES,
        rows.topic_list(qfound, rfound), rf.get("throttle_time_ms"), errors, request_json, response_json,
        st.tls_version, req.capture_file, req.packet, resp_file, resp_packet,
    ), len(request_json or "") + len(response_json or ""))


_EMPTY: dict = {}


def _entities(qf: dict, rf: dict) -> tuple:
    """group_id .. transactional_id: the request's values, else (for the ids a broker assigns) the response's."""
    return (
        qf.get("group_id"), _set(qf.get("member_id"), rf.get("member_id")), qf.get("group_instance_id"),
        _set(qf.get("generation_id"), rf.get("generation_id")), qf.get("member_epoch"), rf.get("member_epoch"),
        _set(qf.get("group_epoch"), rf.get("group_epoch")), qf.get("share_session_epoch"),
        _set(qf.get("producer_id"), rf.get("producer_id")), _set(qf.get("producer_epoch"), rf.get("producer_epoch")),
        qf.get("transactional_id"),
    )


def _set(first: Any, fallback: Any) -> Any:
    """The request's value unless it is a placeholder (None, '' or -1), else the response's."""
    return fallback if first is None or first == "" or first == -1 else first
