# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled fast paths of Exchange.request and Exchange.response, called by the compiled sink.feed.

The usual frame is a request whose header and body read cleanly (no SASL tokens expected, no response waiting for it,
no bytes after the body, not an api whose rows need its dicts) or the response to the oldest request waiting, read
cleanly as its answer. For those, these functions do what the methods do, in the same order, with the header read in
C and the body by the compiled body reader. Every other frame goes to the method itself, before anything is changed,
so the rare paths (errors, SASL, unknown apis, orphans, lost responses) exist once, in Python.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Next
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint8_t

from kafkatap.dissect._big_endian cimport be_i16, be_i32
from kafkatap.dissect.kafka._account cimport Account
from kafkatap.dissect.kafka._apis cimport MAX_API_KEYS, MAX_API_VERSIONS, indexed
from kafkatap.dissect.kafka._bodies cimport read_request as _read_request, read_response as _read_response
from kafkatap.dissect.kafka._found cimport Found
from kafkatap.dissect.kafka._messages cimport Messages
from kafkatap.dissect.kafka._state cimport ConnState, Request, Response

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.kafka import bodies
from kafkatap.dissect.kafka.pairing import MAX_IN_FLIGHT
from kafkatap.dissect.kafka.state import REQUEST, RESPONSE
from kafkatap.dissect.protocol import registry
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.streams.reassembly import Where

cdef signed char _HEADER_VERSIONS[MAX_API_KEYS][MAX_API_VERSIONS]  # a known api's request header version; 0: none


cdef int _fill_header_versions() except -1:
    """The registry's table as a C array: read for every request, where the dict needed a tuple key."""
    cdef int key, version
    for (key, version), header in registry.REQUEST_HEADER_VERSIONS.items():
        if indexed(key, version) and header and registry.is_known(key, version):
            _HEADER_VERSIONS[key][version] = header
    return 0


_fill_header_versions()
cdef frozenset _DICT_APIS = frozenset(bodies.DICT_APIS)
cdef int _PRODUCE = ApiKey.PRODUCE, _SASL_HANDSHAKE = ApiKey.SASL_HANDSHAKE
cdef Py_ssize_t _MAX_IN_FLIGHT = MAX_IN_FLIGHT
# Positions in the tuples read here, from the NamedTuples that declare them (read as tuples: no attribute lookup)
cdef Py_ssize_t _END = bodies.Body._fields.index("end"), _FOUND = bodies.Body._fields.index("found")
cdef Py_ssize_t _TOP = bodies.Body._fields.index("top")
cdef Py_ssize_t _FILE = Where._fields.index("capture_file"), _PACKET = Where._fields.index("packet_index")
cdef Py_ssize_t _TS = Where._fields.index("ts_us")
cdef int _REQUEST = REQUEST, _RESPONSE = RESPONSE


cdef class ExchangeFields:
    """The field of exchange.Exchange these fast paths read for every message, as a C struct member (Exchange's
    compiled base; Exchange.__init__ sets it)."""
    cdef public object out


cdef inline Messages _in_c(out):
    """`out` as the compiled Messages whose C methods its run picked (called without a method lookup, a partial and
    argument parsing), or None: its Python methods then."""
    if isinstance(out, Messages) and (<Messages> out).compiled:
        return <Messages> out
    return None


cdef _frame(out, Messages fast, ConnState st, Request req, Response resp, where, bint unpaired):
    if fast is not None:
        fast.frame(st, req, resp, where, unpaired)
    elif unpaired:
        out.frame(st, req, resp, where, unpaired=True)
    else:
        out.frame(st, req, resp, where)


cpdef request(exchange, ConnState st, at, offset, bytes payload, where):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(payload), pos
    cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(payload)
    cdef int api_key, api_version, length, version
    cdef int32_t correlation_id
    if st is None:  # cpdef takes no `not None`: from Python it could be given None, which C must never dereference
        raise TypeError("request: st must be a ConnState")
    if n < 10 or st.sasl.expected or st.orphans.held:
        return exchange.request(st, at, offset, payload, where)
    api_key, api_version, correlation_id = be_i16(b), be_i16(b + 2), be_i32(b + 4)
    version = _HEADER_VERSIONS[api_key][api_version] if indexed(api_key, api_version) else 0
    if version == 0 or api_key in _DICT_APIS:  # the method reads those (once, with their dicts)
        return exchange.request(st, at, offset, payload, where)
    length = be_i16(b + 8)
    pos = 10
    client_id = None
    if length >= 0:
        if length > n - pos:
            return exchange.request(st, at, offset, payload, where)
        try:
            client_id = PyUnicode_DecodeUTF8(<const char*> b + pos, length, NULL)
        except UnicodeDecodeError:
            return exchange.request(st, at, offset, payload, where)
        pos += length
    elif length != -1:
        return exchange.request(st, at, offset, payload, where)
    if version == 2:
        if pos >= n or b[pos] != 0:  # a tagged field in the header: the method reads it
            return exchange.request(st, at, offset, payload, where)
        pos += 1
    try:
        body = _read_request(api_key, api_version, payload, pos)
    except DecodeError:
        return exchange.request(st, at, offset, payload, where)
    cdef dict top = (<tuple> body)[_TOP]  # checked: a dict's get is then a C call
    if <Py_ssize_t> (<tuple> body)[_END] != n or (api_key == _PRODUCE and top.get("acks") == 0):
        return exchange.request(st, at, offset, payload, where)
    size = n + 4
    cdef object key = correlation_id  # one int object for the sync's field and the pending dict, not one for each use
    st.req_sync.last_correlation_id = key
    st.seq += 1
    cdef Request req = Request.__new__(Request)
    req.seq, req.size, req.api_key, req.api_version = st.seq, size, api_key, api_version
    req.capture_file, req.ts = (<tuple> at)[_FILE], (<tuple> at)[_TS]
    req.packet = <int64_t> (<tuple> at)[_PACKET] + 1
    req.correlation_id, req.known, req.client_id = correlation_id, True, client_id
    req.body = body
    (<Account> st.account).decoded_bytes[_REQUEST] += size
    out = (<ExchangeFields?> exchange).out  # checked: Exchange, whose compiled base it is
    cdef Messages fast = _in_c(out)
    if fast is not None:
        fast.request(st, req, where)
    else:
        out.request(st, req, where)
    if api_key == _SASL_HANDSHAKE:
        st.sasl.after_request(api_key, api_version)
    pending = st.inflight.pending
    old = pending.pop(key, None)
    pending[key] = req
    if old is not None:
        _frame(out, fast, st, old, None, where, True)
    if len(pending) > _MAX_IN_FLIGHT:
        _frame(out, fast, st, pending.pop(next(iter(pending))), None, where, True)


cpdef response(exchange, ConnState st, at, offset, bytes payload, where):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(payload), i = 0
    cdef PyObject* first
    cdef PyObject* value
    if st is None:
        raise TypeError("response: st must be a ConnState")
    if n < 4:
        return exchange.response(st, at, offset, payload, where)
    pending = st.inflight.pending
    correlation_id = be_i32(<const uint8_t*> PyBytes_AS_STRING(payload))
    if not PyDict_Next(pending, &i, &first, &value) or <object> first != correlation_id:
        return exchange.response(st, at, offset, payload, where)  # not the oldest request's answer
    cdef Request req = <Request> value
    if not req.known or req.api_key in _DICT_APIS:
        return exchange.response(st, at, offset, payload, where)
    try:
        body = _read_response(req.api_key, req.api_version, payload)
    except DecodeError:
        return exchange.response(st, at, offset, payload, where)
    if <Py_ssize_t> (<tuple> body)[_END] != n:
        return exchange.response(st, at, offset, payload, where)
    del pending[correlation_id]
    size = n + 4
    cdef Response resp = Response.__new__(Response)
    resp.size, resp.body = size, body
    resp.capture_file, resp.ts = (<tuple> at)[_FILE], (<tuple> at)[_TS]
    resp.packet = <int64_t> (<tuple> at)[_PACKET] + 1
    (<Account> st.account).decoded_bytes[_RESPONSE] += size
    out = (<ExchangeFields?> exchange).out  # checked: Exchange, whose compiled base it is
    cdef Messages fast = _in_c(out)
    if fast is not None:
        fast.response(st, req, resp, where)
    else:
        out.response(st, req, resp, where)
    found = (<tuple> body)[_FOUND]  # None only for the apis read as dicts, which the method handles
    id_names = (<Found> found).id_names if found is not None else None
    if id_names:
        learn = exchange.topics.learn
        for topic_id, name in id_names:
            learn(topic_id, name)
    _frame(out, fast, st, req, resp, where, False)
