# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twins of rows.request, rows.response and rows.frame: the usual message's rows built here, as those
functions build them. The usual case is record data that splits cleanly (whole batches, CRCs right, no control
batch), no records/ table asked for, and a decoded pair that is not a share api; anything else, before any row is
written, goes to the pure-Python function. The fields of Rows they read are C struct members of its compiled base
(RowsFields), and they call the writer's compiled add and extend in C, and the one frames/ row builder
(frames_row.frame_row, compiled from its Python source)."""

from kafkatap.dissect.kafka._found cimport Found
from kafkatap.dissect.kafka._state cimport ConnState, Request, Response
from kafkatap.dissect.tables.batch_row cimport batch_rows as _batch_rows
from kafkatap.dissect.tables._columns cimport add as _add, extend as _extend
from kafkatap.dissect.tables.frames_row cimport frame_row

from kafkatap.dissect.kafka.bodies import Body
from kafkatap.dissect.kafka.share import SHARE_APIS
from kafkatap.dissect.protocol import error_name
from kafkatap.dissect.protocol.generated.errors import ERRORS
from kafkatap.dissect.protocol.generated import APIS
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.records import _batch_headers
from kafkatap.dissect.records.batch import CONTROL, Batch
from kafkatap.dissect.tables import rows as reference  # it imports this module: its functions are read per call
from kafkatap.dissect.tables.batches import FETCHES
from kafkatap.dissect.tables.frames_row import NO_ENTITIES

cdef dict _NAMES = {key: row[0] for key, row in APIS.items()}
cdef tuple _NO_ENTITIES = NO_ENTITIES
cdef int _PRODUCE = ApiKey.PRODUCE, _FETCH = ApiKey.FETCH
cdef frozenset _FETCHES = FETCHES
cdef dict _ERRORS = ERRORS
cdef tuple _SHARE_APIS = SHARE_APIS
cdef object _split_batches = _batch_headers.split_batches
# Positions in the tuples read here, from the NamedTuples that declare them (read as tuples: no attribute lookup)
cdef Py_ssize_t _JSON = Body._fields.index("json"), _FOUND = Body._fields.index("found")
cdef Py_ssize_t _TOP = Body._fields.index("top")
cdef Py_ssize_t _CRC_OK = Batch._fields.index("crc_ok"), _ATTRIBUTES = Batch._fields.index("attributes")
cdef long _CONTROL = CONTROL


cdef class RowsFields:
    """The fields of rows.Rows that every message's rows read, as C struct members; Rows.__init__ sets them."""
    cdef public object topics, frames, batches, records
    cdef public dict messages, statuses


cdef list _clean(list partitions, Py_ssize_t data_at, bint final):
    """The batches of each partition's record data (None for none), or None if any of it needs the pure-Python
    function: a split error, a cut batch where one cannot be (final), a CRC mismatch, a control batch."""
    out = []
    for partition in partitions:
        data = partition[data_at]
        if not data:
            out.append(None)
            continue
        batches, partial, error = _split_batches(data)
        if error is not None or (partial and final):
            return None
        for batch in batches:
            if not (<tuple> batch)[_CRC_OK] or <long> (<tuple> batch)[_ATTRIBUTES] & _CONTROL:
                return None
        out.append(batches)
    return out


def request(RowsFields rows not None, ConnState st not None, Request req not None, where):
    if req.api_key != _PRODUCE:
        return
    partitions = req.body.rows
    split = _clean(partitions, 3, True) if rows.records is None else None
    if split is None:
        return reference.request(rows, st, req, where)
    produce = []
    resolve = rows.topics.resolve
    for (name, topic_id, partition, _), batches in zip(partitions, split):
        if batches:
            produce.append((name if name is not None else resolve(topic_id, "batches"), topic_id, partition, batches))
    req.produce = produce


def response(RowsFields rows not None, ConnState st not None, Request req not None, Response resp not None,
             where):
    if req.api_key not in _FETCHES:  # no rows of its own
        return
    if req.api_key != _FETCH:
        return reference.response(rows, st, req, resp, where)
    partitions = resp.body.rows
    split = _clean(partitions, 3, False) if rows.records is None else None
    if split is None:
        return reference.response(rows, st, req, resp, where)
    offsets = {} if req.body is None else {(topic or topic_id, partition): offset
                                           for topic, topic_id, partition, offset in req.body.rows}
    carrier = (st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, "fetch", resp.ts,
               req.client_id, None, None)
    resolve, batches_out = rows.topics.resolve, rows.batches
    for (name, topic_id, partition, _, high_watermark, partition_error), batches in zip(partitions, split):
        if batches:
            topic = name if name is not None else resolve(topic_id, "batches")
            tail = (offsets.get((name or topic_id, partition)), high_watermark, None, partition_error)
            _extend(batches_out, _batch_rows(carrier + (topic, topic_id, partition), batches, tail, None))


def frame(RowsFields rows not None, ConnState st not None, Request req not None, Response resp, where,
          unpaired=False):
    if unpaired or resp is None:
        return reference.frame(rows, st, req, resp, where, unpaired)
    qbody, rbody, api_key = req.body, resp.body, req.api_key
    name = _NAMES.get(api_key)
    if (qbody is None or rbody is None or name is None or req.error is not None or resp.error is not None
            or not req.known or api_key in _SHARE_APIS or qbody[_FOUND] is None or rbody[_FOUND] is None):
        return reference.frame(rows, st, req, resp, where, unpaired)
    messages, statuses = rows.messages, rows.statuses
    messages[name] = messages.get(name, 0) + 1
    resp_ts = resp.ts
    if req.produce is not None:
        if _control(req.produce):
            rows.produce_batches(st, req, rbody, rows._problem(st, 1, req, where))
        else:
            _produce_batches(rows, req, st, rbody)
    statuses["ok"] = statuses.get("ok", 0) + 1
    cdef tuple qb = <tuple> qbody, rb = <tuple> rbody
    cdef Found qfound = qb[_FOUND], rfound = rb[_FOUND]
    cdef dict qf = qfound.fields, rf = rb[_TOP]
    code = rf.get("error_code")
    if not code:
        code = rfound.first_error or (0 if rfound.has_error else None)
    if qfound.topic_ids or rfound.topic_ids:
        topics = rows.topic_list(qfound, rfound)
    else:
        topics = tuple(dict.fromkeys(qfound.topics + rfound.topics)) or None
    request_json, response_json = qb[_JSON], rb[_JSON]
    cdef tuple entities = _NO_ENTITIES
    if qf or len(rf) > ("throttle_time_ms" in rf) + ("error_code" in rf):
        entities = reference._entities(qf, rf)
    _add(rows.frames, frame_row(
        st, req.ts, resp_ts, api_key, name, req.api_version, req.correlation_id, req.client_id, req.size, resp.size,
        code, _error_name(code) if code is not None else None, "ok", entities, topics, rf.get("throttle_time_ms"),
        None, request_json, response_json, req.capture_file, req.packet, resp.capture_file, resp.packet),
        len(request_json) + len(response_json))


cdef object _error_name(code):
    """error_name without a Python call for the known codes."""
    return _ERRORS.get(code) or error_name(code)


cdef bint _control(list produce):
    """Whether a Produce's batches hold a control batch (its control record may need reporting)."""
    for _, _, _, batches in produce:
        for batch in batches:
            if <long> (<tuple> batch)[_ATTRIBUTES] & _CONTROL:
                return True
    return False


cdef _produce_batches(RowsFields rows, Request req, ConnState st, rbody):
    """Rows.produce_batches for batches without a control batch (nothing to report, so no reporter is built)."""
    results = {(name or topic_id, index): (error, base_offset) for name, topic_id, index, error, base_offset
               in rbody.rows}
    head = (st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, "produce", req.ts,
            req.client_id, None, None)
    batches_out = rows.batches
    for topic, topic_id, partition, batches in req.produce:
        err, assigned = results.get((topic_id if topic_id is not None else topic, partition), (None, None))
        tail = (None, None, assigned, err)
        _extend(batches_out, _batch_rows(head + (topic, topic_id, partition), batches, tail, None))
