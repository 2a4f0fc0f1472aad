# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twins of rows.request, rows.response and rows.frame: the usual message's rows built here, as those
functions build them. The usual case is record data that splits cleanly (whole batches, CRCs right, no control
batch), no records/ table asked for, and a decoded pair that is not a share api; anything else, before any row is
written, goes to the pure-Python function. The fields of Rows they read are C struct members of its compiled base
(RowsFields), and they call the writer's compiled add and extend in C, and the one frames/ row builder
(frames_row.frame_row, compiled from its Python source).

Plain record data (magic 2 batches only, CRCs right, no control batch: what clients send and fetch) has its batches/
rows written straight from the batch headers into the writer's columns (`_plain_rows`), without a Batch or a row
tuple per batch: on a chatty capture those objects and the builder's reading of them were a tenth of the run. The
header's values are derived by batch_row's functions, in the order of its HEADER_COLUMNS (the fingerprint null: no
records/ asked); other record data goes through batch_row.batch_rows."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_SIZE
from libc.stdint cimport INT64_MAX, INT64_MIN, uint8_t

from kafkatap.dissect.kafka._apis cimport MAX_API_KEYS
from kafkatap.dissect.kafka._found cimport Found
from kafkatap.dissect.kafka._messages cimport Messages
from kafkatap.dissect.kafka._state cimport ConnState, Request, Response
from kafkatap.dissect.records._batch_headers cimport BATCH, END, PARTIAL, Header, Next, crc_ok, next_batch
from kafkatap.dissect.tables.batch_row cimport (batch_rows as _batch_rows, column_us, compression, is_control,
                                                 is_transactional)
from kafkatap.dissect.tables._columns cimport (Builder, WriterFields, add as _add, builder_of, extend as _extend,
                                               rows_added)
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
from kafkatap.dissect.tables.batch_row import HEADER_COLUMNS
from kafkatap.dissect.tables.batches import FETCHES
from kafkatap.dissect.tables.frames_row import NO_ENTITIES
from kafkatap.dissect.tables.schema import BATCHES

# By api key, each a tuple's item read in C where a dict's lookup hashed the key (an api past them: no name, pure path)
cdef tuple _NAMES = tuple(APIS[key][0] if key in APIS else None for key in range(MAX_API_KEYS))
cdef tuple _SHARE = tuple(key in SHARE_APIS for key in range(MAX_API_KEYS))
cdef tuple _NO_ENTITIES = NO_ENTITIES
cdef int _PRODUCE = ApiKey.PRODUCE, _FETCH = ApiKey.FETCH
cdef frozenset _FETCHES = FETCHES
cdef dict _ERRORS = ERRORS
cdef object _split_batches = _batch_headers.split_batches
# Positions in the tuples read here, from the NamedTuples that declare them (read as tuples: no attribute lookup)
cdef Py_ssize_t _JSON = Body._fields.index("json"), _FOUND = Body._fields.index("found")
cdef Py_ssize_t _TOP = Body._fields.index("top"), _ROWS = Body._fields.index("rows")
cdef Py_ssize_t _CRC_OK = Batch._fields.index("crc_ok"), _ATTRIBUTES = Batch._fields.index("attributes")
cdef long _CONTROL = CONTROL
cdef tuple _CODEC_NAMES = tuple((compression(codec),) for codec in range(8))  # by attributes & 7, as 1-tuples
# Where a batches/ row's header columns (batch_row.HEADER_COLUMNS) are: after the carrying message's, before the tail
cdef Py_ssize_t _HEAD = BATCHES.get_field_index(HEADER_COLUMNS[0])
cdef Py_ssize_t _TAIL = _HEAD + len(HEADER_COLUMNS), _WIDTH = len(BATCHES)
if tuple(BATCHES.names[_HEAD:_TAIL]) != HEADER_COLUMNS:
    raise ImportError(f"_rows.pyx: the batches/ schema's header columns are not {HEADER_COLUMNS}")


cdef class RowsFields(Messages):
    """The fields of rows.Rows that every message's rows read, as C struct members; Rows.__init__ sets them. Its
    request, response and frame are the compiled exchange's to call in C (kafka/_messages.pxd): this module's."""
    cdef public object topics, frames, batches, records
    cdef public dict messages, statuses

    cdef request(self, ConnState st, Request req, where):
        return _request(self, st, req, where)

    cdef response(self, ConnState st, Request req, Response resp, where):
        return _response(self, st, req, resp, where)

    cdef frame(self, ConnState st, Request req, Response resp, where, bint unpaired):
        return _frame(self, st, req, resp, where, unpaired)


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
    return _request(rows, st, req, where)


cdef _request(RowsFields rows, ConnState st, Request req, where):
    if req.api_key != _PRODUCE:
        return
    if rows.records is not None or req.body is None:  # the body is read as a tuple below: never None there
        return reference.request(rows, st, req, where)
    partitions = (<tuple> req.body)[_ROWS]
    plain = _all_plain(partitions, True)
    split = None if plain else _clean(partitions, 3, True)
    if not plain and split is None:
        return reference.request(rows, st, req, where)
    produce = []
    for i, (name, topic_id, partition, data) in enumerate(partitions):
        batches = data if plain else split[i]  # plain: the record data itself, its rows written from it (_plain_rows)
        if batches:
            produce.append((name if name is not None else rows.topics.resolve(topic_id, "batches"), topic_id,
                            partition, batches, None))
    req.produce = produce


def response(RowsFields rows not None, ConnState st not None, Request req not None, Response resp not None,
             where):
    return _response(rows, st, req, resp, where)


cdef _response(RowsFields rows, ConnState st, Request req, Response resp, where):
    if req.api_key not in _FETCHES:  # no rows of its own
        return
    if req.api_key != _FETCH:
        return reference.response(rows, st, req, resp, where)
    if rows.records is not None or resp.body is None:
        return reference.response(rows, st, req, resp, where)
    partitions = (<tuple> resp.body)[_ROWS]
    plain = _all_plain(partitions, False)
    split = None if plain else _clean(partitions, 3, False)
    if not plain and split is None:
        return reference.response(rows, st, req, resp, where)
    offsets = {} if req.body is None else {(topic or topic_id, partition): offset
                                           for topic, topic_id, partition, offset in (<tuple> req.body)[_ROWS]}
    carrier = (st.conn_id, st.client_addr, st.broker_addr, req.correlation_id, req.api_version, "fetch", resp.ts,
               req.client_id, None, None)
    batches_out = rows.batches
    for i, (name, topic_id, partition, data, high_watermark, partition_error) in enumerate(partitions):
        batches = data if plain else split[i]
        if batches:
            topic = name if name is not None else rows.topics.resolve(topic_id, "batches")
            tail = (offsets.get((name or topic_id, partition)), high_watermark, None, partition_error)
            _batches_rows(batches_out, carrier + (topic, topic_id, partition), batches, tail, None)


def frame(RowsFields rows not None, ConnState st not None, Request req not None, Response resp, where,
          unpaired=False):
    return _frame(rows, st, req, resp, where, unpaired)


cdef _frame(RowsFields rows, ConnState st, Request req, Response resp, where, bint unpaired):
    if unpaired or resp is None:
        _split_plain(req)
        return reference.frame(rows, st, req, resp, where, unpaired)
    qbody, rbody = req.body, resp.body
    cdef int api_key = req.api_key
    name = _NAMES[api_key] if 0 <= api_key < MAX_API_KEYS else None
    if (qbody is None or rbody is None or name is None or req.error is not None or resp.error is not None
            or not req.known or _SHARE[api_key] or (<tuple> qbody)[_FOUND] is None
            or (<tuple> rbody)[_FOUND] is None):
        _split_plain(req)
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
        topics = _names(qfound.topics, rfound.topics)
    request_json, response_json = qb[_JSON], rb[_JSON]
    cdef tuple entities = _NO_ENTITIES
    if qf or len(rf) > ("throttle_time_ms" in rf) + ("error_code" in rf):
        entities = reference._entities(qf, rf)
    _add(rows.frames, frame_row(
        st.conn_id, st.client_addr, st.broker_addr, req.ts, resp_ts, api_key, name, req.api_version,
        req.correlation_id, req.client_id, req.size, resp.size, code, _error_name(code) if code is not None else None,
        "ok", entities, topics, rf.get("throttle_time_ms"), None, request_json, response_json, st.tls_version,
        req.capture_file, req.packet, resp.capture_file, resp.packet),
        len(request_json) + len(response_json))


cdef object _names(list first, list then):
    """tuple(dict.fromkeys(first + then)) or None (rows.topic_list's usual case) without the joined list and the dict
    for the one or two names a message usually holds (two: without a list either). For str names, being in the list
    (equal) is being a dict's key already; any other value, or many names, goes through dict.fromkeys itself."""
    cdef Py_ssize_t n = len(first) + len(then)
    if n == 0:
        return None
    if n <= 2:  # a request's topic and its response's, the usual case: without a list
        a = first[0] if len(first) else then[0]
        b = then[len(then) - 1] if len(then) else first[len(first) - 1]  # a again when there is one name
        if type(a) is str and type(b) is str:
            return (a,) if a == b else (a, b)
    if n <= 8:
        out = []
        for names in (first, then):
            for name in <list> names:
                if type(name) is not str:
                    return tuple(dict.fromkeys(first + then))
                if name not in out:
                    out.append(name)
        return tuple(out)
    return tuple(dict.fromkeys(first + then))


cdef object _error_name(code):
    """error_name without a Python call for the known codes."""
    return _ERRORS.get(code) or error_name(code)


cdef bint _control(list produce):
    """Whether a Produce's batches hold a control batch (its control record may need reporting); plain record data
    holds none."""
    for _, _, _, batches, _ in produce:
        if type(batches) is bytes:
            continue
        for batch in batches:
            if <long> (<tuple> batch)[_ATTRIBUTES] & _CONTROL:
                return True
    return False


cdef _produce_batches(RowsFields rows, Request req, ConnState st, rbody):
    """Rows.produce_batches for batches without a control batch (nothing to report, so no reporter is built). The
    response's partitions by (topic name or id, partition), as a dict; for the usual one partition, its values
    compared instead (what the dict's lookup of an equal key finds)."""
    cdef list answered = (<tuple> rbody)[_ROWS]
    cdef bint one = len(answered) == 1
    if one:
        name, answered_id, index, error, base_offset = answered[0]
        answered_topic = name or answered_id
    else:
        results = {(name or topic_id, index): (error, base_offset) for name, topic_id, index, error, base_offset
                   in answered}
    conn_id, client_addr, broker_addr, correlation_id = st.conn_id, st.client_addr, st.broker_addr, req.correlation_id
    api_version, ts, client_id = req.api_version, req.ts, req.client_id
    batches_out = rows.batches
    for topic, topic_id, partition, batches, prints in req.produce:
        key_topic = topic_id if topic_id is not None else topic
        if one:
            err, assigned = (error, base_offset) if key_topic == answered_topic and partition == index else (None, None)
        else:
            err, assigned = results.get((key_topic, partition), (None, None))
        tail = (None, None, assigned, err)
        head = (conn_id, client_addr, broker_addr, correlation_id, api_version, "produce", ts, client_id, None, None,
                topic, topic_id, partition)  # Rows.produce_batches's head + (topic, topic_id, partition), in one tuple
        _batches_rows(batches_out, head, batches, tail, prints)


cdef _split_plain(Request req):
    """A Produce's plain record data (kept as bytes by `request`) as the Batch lists the reference functions read."""
    if req.produce is None:
        return
    req.produce = [(topic, topic_id, partition, _split_batches(batches)[0] if type(batches) is bytes else batches,
                    prints) for topic, topic_id, partition, batches, prints in req.produce]


cdef bint _all_plain(list partitions, bint final) except -1:
    """Whether every partition's record data (the 4th field) is absent or plain (`_plain`)."""
    for partition in partitions:
        data = (<tuple> partition)[3]
        if data and not (type(data) is bytes and _plain(data, final)):
            return False
    return True


cdef bint _plain(bytes data, bint final) except -1:
    """Whether data holds magic 2 batches only, each with its CRC and none a control batch, all whole (final: a
    Produce) or with maybe a cut one last (a Fetch response may end so, and that one has no row): the record data whose
    rows are written straight from the batch headers (`_plain_rows`)."""
    cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos = 0
    cdef Header h
    cdef Next found
    while True:
        found = next_batch(b + pos, n - pos, &h)
        if found == END:
            return True
        if found == PARTIAL:
            return not final
        if found != BATCH or h.attributes & _CONTROL or not crc_ok(data, b, pos, &h):
            return False
        pos += h.size


cdef _batches_rows(WriterFields writer, tuple head, batches, tuple tail, list prints):
    """A partition's batches/ rows: from plain record data (bytes, never with prints: its records were not read)
    straight into the columns, else (or for what did not fit there) from its Batch tuples."""
    cdef Py_ssize_t written = 0
    if type(batches) is bytes:
        out = builder_of(writer)
        written = _plain_rows(out, head, batches, tail) if out is not None else 0
        if written == -1:
            rows_added(writer)
            return
        batches = _split_batches(batches)[0][written:]
    _extend(writer, _batch_rows(head, batches, tail, None, prints))


cdef Py_ssize_t _plain_rows(Builder out, tuple head, bytes data, tuple tail) except -2:
    """The rows of plain record data's whole batches written into the columns: -1 when all were, else how many were
    before the first one with a head or tail value that does not fit its column."""
    cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos = 0, written = 0
    cdef Header h
    if PyTuple_GET_SIZE(head) != _HEAD or PyTuple_GET_SIZE(tail) != _WIDTH - _TAIL:
        return 0
    while next_batch(b + pos, n - pos, &h) == BATCH:
        if not _plain_row(out, head, &h, tail):
            return written
        written += 1
        pos += h.size
    return -1


cdef inline int _timestamp(Builder out, Py_ssize_t c, long long us) except -1:
    """A timestamp column's value from `column_us` (-1: null)."""
    return out.integer(c, us) if us >= 0 else out.null(c)


cdef bint _plain_row(Builder out, tuple head, Header* h, tuple tail) except -1:
    """One batch's row, its values as batch_row.batch_rows derives them from a Batch; False (nothing written) when a
    head or tail value does not fit, or the last offset is past int64."""
    cdef Py_ssize_t c, written
    cdef long long last_offset
    if (h.last_offset_delta > 0 and h.base_offset > INT64_MAX - h.last_offset_delta
            or h.last_offset_delta < 0 and h.base_offset < INT64_MIN - h.last_offset_delta):
        return False
    last_offset = h.base_offset + h.last_offset_delta
    written = out.values(0, head)
    if written < _HEAD:
        out.row_undo(written)
        return False
    c = _HEAD
    if not (out.integer(c, 2) and out.integer(c + 1, h.base_offset) and out.integer(c + 2, last_offset)
            and out.integer(c + 3, h.record_count) and out.integer(c + 4, h.producer_id)
            and out.integer(c + 5, h.producer_epoch) and out.integer(c + 6, h.base_sequence)
            and out.boolean(c + 7, is_transactional(h.attributes)) and out.boolean(c + 8, is_control(h.attributes))
            and out.null(c + 9)
            and out.values(c + 10, _CODEC_NAMES[h.attributes & 7]) == 1 and out.integer(c + 11, h.size)
            and _timestamp(out, c + 12, column_us(h.first_timestamp))
            and _timestamp(out, c + 13, column_us(h.max_timestamp))
            and out.boolean(c + 14, True) and out.null(c + 15)):
        raise AssertionError("_rows.pyx: a batch header's value does not fit its batches/ column")
    written = out.values(_TAIL, tail)
    if written < _WIDTH - _TAIL:
        out.row_undo(_TAIL + written)
        return False
    out.row_end()
    return True

