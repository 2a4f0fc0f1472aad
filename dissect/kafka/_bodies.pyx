# cython: language_level=3, boundscheck=True, wraparound=False, initializedcheck=True
"""Compiled twins of bodies.read_request and bodies.read_response: one pass over a message body that checks it,
writes its JSON and collects what `walk`, `top_level` and `collect` would, without building the message's dicts.

What each field means comes from its plan (plans.py, derived from the schema table), turned into C arrays once per
message version. Every read is checked against the frame's length. Known tagged fields are read from each struct's
tagged section like the plain fields, in the order they come. Anything the pass does not take on (an unknown or
repeated tag, a tagged value whose length does not match it, a value that would not decode, a message without a
plan) goes to the pure-Python reader, which gives the result or the DecodeError: so results are the same either way,
and errors (counted anomaly rows) always come from the reference.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport Py_INCREF, PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void* PyUnicode_DATA(object o)

from kafkatap.dissect._big_endian cimport be_i16, be_i32, be_i64, be_u16, be_u32
from kafkatap.dissect._tuples cimport new_tuple, put
from kafkatap.dissect.kafka._apis cimport MAX_API_KEYS, MAX_API_VERSIONS, indexed
from kafkatap.dissect.kafka._found cimport Found

from kafkatap.dissect.kafka import bodies, plans
from kafkatap.dissect.kafka.extract import NULL_TOPIC_ID
from kafkatap.dissect.protocol import is_known, response_header_version
from kafkatap.dissect.protocol.table import SCALARS

# The codes a plan's fields carry, declared once in plans.py: C ints here, set from there at import
cdef int BOOL = plans.BOOL, INT8 = plans.INT8, INT16 = plans.INT16, UINT16 = plans.UINT16, INT32 = plans.INT32
cdef int UINT32 = plans.UINT32, INT64 = plans.INT64, UUID = plans.UUID, STRING = plans.STRING, BYTES = plans.BYTES
cdef int STRUCT = plans.STRUCT, ARRAY = plans.ARRAY
cdef int PLAIN = plans.PLAIN, SECRET = plans.SECRET, RECORDS = plans.RECORDS
cdef int NONE = plans.NONE, WANTED_FIELD = plans.WANTED_FIELD, ERROR = plans.ERROR, TOPIC = plans.TOPIC
cdef int TOPIC_NAMES = plans.TOPIC_NAMES
cdef Py_ssize_t[16] _SIZES  # bytes of each fixed-size kind (plans.py puts them first, BOOL .. INT64)
if INT64 >= 16 or any(plans.KINDS[k] not in SCALARS for k in range(INT64 + 1)):
    raise ImportError("plans.KINDS: the fixed-size kinds must come first, at most 16 of them")
for _k in range(INT64 + 1):
    _SIZES[_k] = SCALARS[plans.KINDS[_k]]

cdef enum:
    OK = 0
    PURE = 1  # not for this pass: the pure-Python reader decides


cdef struct Spec:
    const char* key
    Py_ssize_t key_len
    int kind, element, nullable, flexible, bytes_as, role, index, top, column, collect
    PyObject* child  # a StructPlan (kept alive by the parent's `keep`), or NULL


cdef class StructPlan:
    cdef Spec* specs  # the plain fields, then the tagged ones (specs[n + j] has tag tags[j])
    cdef int64_t* tags
    cdef Py_ssize_t n, n_tagged
    cdef bint flexible, context
    cdef int topic_id, name
    cdef list keep

    def __cinit__(self, tuple desc):
        flexible, topic_id, name, context, fields, tagged = desc
        self.flexible, self.topic_id, self.name, self.context = flexible, topic_id, name, context
        self.n, self.n_tagged = len(fields), len(tagged)
        if self.n_tagged > 8 * sizeof(uint64_t):  # plans.MAX_TAGGED: such a struct gets no plan
            raise ValueError(f"{self.n_tagged} tagged fields: more than a pass's 64-bit set of tags seen")
        self.keep = []
        self.specs = <Spec*> malloc(max(self.n + self.n_tagged, 1) * sizeof(Spec))
        self.tags = <int64_t*> malloc(max(self.n_tagged, 1) * sizeof(int64_t))
        if self.specs == NULL or self.tags == NULL:
            raise MemoryError()
        for i, f in enumerate(fields):
            self.spec(i, f)
        for j, (tag, f) in enumerate(tagged):
            self.tags[j] = tag
            self.spec(self.n + j, f)

    cdef spec(self, Py_ssize_t i, tuple f):
        key, kind, element, nullable, flex, bytes_as, role, index, top, column, collect, child = f
        if not key.isascii():  # a pass's JSON is copied as ASCII unless a string value made it otherwise (_json)
            raise ValueError(f"plan of {key!r}: a key beyond ASCII")
        self.keep.append(key)
        cdef Spec* s = &self.specs[i]
        s.key, s.key_len = PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)
        s.kind, s.element, s.nullable, s.flexible, s.bytes_as = kind, element, nullable, flex, bytes_as
        s.role, s.index, s.top, s.column, s.collect = role, index, top, column, collect
        s.child = NULL
        if child is not None:
            sub = StructPlan(child)
            self.keep.append(sub)
            s.child = <PyObject*> sub
        elif kind == STRUCT or element == STRUCT:
            raise ValueError(f"plan of {key!r}: a struct without the plan of its fields")

    def __dealloc__(self):
        free(self.specs)
        free(self.tags)


cdef class Plan:
    cdef StructPlan root
    cdef tuple wanted, top
    cdef int columns

    def __cinit__(self, tuple desc, tuple wanted, tuple top):
        root, _, _, columns = desc
        self.root = StructPlan(root)
        self.wanted, self.top, self.columns = wanted, top, columns


cdef class Pass:
    """The state of one body's pass, and the JSON buffer (reused by the next pass)."""
    cdef const uint8_t* buf
    cdef Py_ssize_t end
    cdef char* out
    cdef Py_ssize_t n, cap
    cdef Plan plan
    cdef object value  # the last value _value kept
    cdef dict fields, top
    cdef list topics, topic_ids, id_names, cur, rows
    cdef int64_t first_error
    cdef bint has_error, ascii  # ascii: no string's UTF-8 beyond ASCII written (every other byte written is ASCII)

    def __cinit__(self):
        self.cap = 4096
        self.out = <char*> malloc(self.cap)
        if self.out == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.out)

    cdef int grow(self, Py_ssize_t k) except -1:
        cdef Py_ssize_t cap = self.cap
        while self.n + k > cap:
            cap *= 2
        cdef char* bigger = <char*> realloc(self.out, cap)
        if bigger == NULL:
            raise MemoryError()
        self.out, self.cap = bigger, cap
        return 0

    cdef inline int put(self, const char* s, Py_ssize_t k) except -1:
        if self.n + k > self.cap:
            self.grow(k)
        memcpy(self.out + self.n, s, k)
        self.n += k
        return 0

    cdef inline int put_char(self, char c) except -1:
        if self.n + 1 > self.cap:
            self.grow(1)
        self.out[self.n] = c
        self.n += 1
        return 0


# Indexed in C, where a dict needed a tuple key for every body: [response][api_key][api_version] -> the Plan, or None
# for the pure-Python reader, once built (a reference held for the life of the process); NULL until then.
cdef PyObject* _PLANS[2][MAX_API_KEYS][MAX_API_VERSIONS]
cdef signed char _RESPONSE_FLEXIBLE[MAX_API_KEYS][MAX_API_VERSIONS]  # 1: a flexible response header, 2: not, 0: unknown
cdef Pass _PASS = Pass()
cdef type _Body = bodies.Body
cdef object _pure_request = bodies.read_request
cdef object _pure_response = bodies.read_response
cdef const char* _B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
cdef const char* _B64URL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
cdef const char* _HEX = b"0123456789abcdef"
cdef char[128] _ESCAPE  # per ASCII byte, what json.dumps writes after a backslash ("u": \\u00XX), or 0: the byte itself
for _c in range(128):
    _ESCAPE[_c] = ord("u") if _c < 0x20 else 0
for _c, _e in ((10, b"n"), (13, b"r"), (9, b"t"), (8, b"b"), (12, b"f"), (34, b'"'), (92, b"\\")):
    _ESCAPE[_c] = _e[0]
cdef Py_ssize_t _in_one_pass = 0, _handed_back = 0


def counts() -> tuple:
    """(bodies read in one pass, bodies handed to the pure-Python reader) so far in this process."""
    return _in_one_pass, _handed_back


cpdef read_request(int api_key, int api_version, frame, Py_ssize_t pos):
    global _handed_back
    plan = _plan(api_key, api_version, False)
    if plan is not None and type(frame) is bytes and 0 <= pos <= PyBytes_GET_SIZE(frame):
        body = _read(<Plan> plan, frame, pos)
        if body is not None:
            return body
    _handed_back += 1
    return _pure_request(api_key, api_version, frame, pos)


cpdef read_response(int api_key, int api_version, frame):
    global _handed_back
    plan = _plan(api_key, api_version, True)
    if plan is not None and type(frame) is bytes:
        if _RESPONSE_FLEXIBLE[api_key][api_version] == 0:  # in range: a plan was found
            _RESPONSE_FLEXIBLE[api_key][api_version] = 1 if response_header_version(api_key, api_version) == 1 else 2
        pos = -1
        if _RESPONSE_FLEXIBLE[api_key][api_version] == 2:
            pos = 4
        elif PyBytes_GET_SIZE(frame) > 4 and (<const uint8_t*> PyBytes_AS_STRING(frame))[4] == 0:
            pos = 5
        if 0 <= pos <= PyBytes_GET_SIZE(frame):
            body = _read(<Plan> plan, frame, pos)
            if body is not None:
                return body
    _handed_back += 1
    return _pure_response(api_key, api_version, frame)


cdef object _plan(int api_key, int api_version, bint response):
    if not indexed(api_key, api_version):
        return None  # no api has such a key or version: the pure-Python reader says so
    cdef PyObject* built = _PLANS[response][api_key][api_version]
    if built != NULL:
        return <object> built
    plan = None
    if is_known(api_key, api_version):
        desc = plans.plan(api_key, api_version, response)
        if desc is not None:
            plan = Plan(desc, bodies.WANTED[response], bodies.TOP[response])
    Py_INCREF(plan)
    _PLANS[response][api_key][api_version] = <PyObject*> plan
    return plan


cdef object _read(Plan plan, bytes frame, Py_ssize_t pos):
    """The Body of frame[pos:] under plan, or None for the pure-Python reader."""
    cdef Pass p = _PASS
    p.buf = <const uint8_t*> PyBytes_AS_STRING(frame)
    p.end = PyBytes_GET_SIZE(frame)
    p.n = 0
    p.plan = plan
    p.fields = {}
    p.topics, p.topic_ids, p.id_names, p.rows = [], [], [], []
    p.top = {}
    p.cur = [None] * plan.columns
    p.first_error, p.has_error, p.ascii = 0, False, True
    cdef Py_ssize_t at = pos
    if _struct(p, plan.root, &at, True) != OK:
        p.plan = None
        return None
    json = _json(p)
    cdef Found found = Found.__new__(Found)
    found.fields, found.topics, found.topic_ids, found.id_names = p.fields, p.topics, p.topic_ids, p.id_names
    found.first_error, found.has_error = p.first_error, p.has_error
    body = new_tuple(_Body, 6)  # Body(at, None, json, found, top, p.rows)
    put(body, 0, at)
    put(body, 1, None)
    put(body, 2, json)
    put(body, 3, found)
    put(body, 4, p.top)
    put(body, 5, p.rows)
    p.plan = None
    global _in_one_pass
    _in_one_pass += 1
    return body


cdef object _json(Pass p):
    """The JSON written as a str: copied as it is when all ASCII (the usual body), where decoding would check every
    byte again."""
    if not p.ascii:
        return PyUnicode_DecodeUTF8(p.out, p.n, NULL)
    json = PyUnicode_New(p.n, 127)
    memcpy(PyUnicode_DATA(json), p.out, p.n)
    return json


cdef int _struct(Pass p, StructPlan s, Py_ssize_t* pos, bint top) except -1:
    cdef Py_ssize_t i, topics0 = len(p.topics), ids0 = len(p.topic_ids), names0 = len(p.id_names)
    cdef object topic_id = None, name = None
    cdef int64_t count
    p.put_char(b"{")
    for i in range(s.n):
        if i:
            p.put(b", ", 2)
        p.value = None
        if _field(p, s, i, pos, top) != OK:
            return PURE
        if s.specs[i].kind >= STRUCT:
            continue
        if i == s.topic_id:
            topic_id = p.value
        elif i == s.name:
            name = p.value
    if s.flexible:
        if _uvarint(p, pos, &count) != OK:
            return PURE
        if count and _tagged(p, s, count, pos, top) != OK:
            return PURE
    p.put_char(b"}")
    if s.topic_id >= 0 and topic_id is not None and topic_id != NULL_TOPIC_ID:
        p.topic_ids.insert(ids0, topic_id)
        if s.context and isinstance(name, str):
            p.id_names.insert(names0, (topic_id, name))
    if s.context and isinstance(name, str):
        p.topics.insert(topics0, name)
    return OK


cdef int _tagged(Pass p, StructPlan s, int64_t count, Py_ssize_t* pos, bint top) except -1:
    """The `count` fields of a tagged section, as `wire.read_tagged` would add them to the struct's dict: each after
    the ones before it. An unknown tag (kept raw under `_unknown_tagged_fields`, placed where the first one came) or
    a repeated one (its value replaced in place) is not for this pass."""
    cdef uint64_t seen = 0
    cdef int64_t tag, size
    cdef Py_ssize_t j, start
    if count > p.end - pos[0]:
        return PURE
    while count > 0:
        count -= 1
        if _uvarint(p, pos, &tag) != OK or _uvarint(p, pos, &size) != OK or size > p.end - pos[0]:
            return PURE
        for j in range(s.n_tagged):
            if s.tags[j] == tag:
                break
        else:
            return PURE
        if seen >> j & 1:
            return PURE
        seen |= (<uint64_t> 1) << j
        if s.n or seen != (<uint64_t> 1) << j:
            p.put(b", ", 2)
        start = pos[0]
        p.value = None
        if _field(p, s, s.n + j, pos, top) != OK or pos[0] != start + size:
            return PURE
    return OK


cdef int _field(Pass p, StructPlan s, Py_ssize_t i, Py_ssize_t* pos, bint top) except -1:
    """Field i of s (plain, or tagged past s.n): its key and value written, and what `walk` takes from it; a value it
    keeps left in p.value."""
    cdef Spec* f = &s.specs[i]
    cdef object value
    cdef bint keep
    p.put(f.key, f.key_len)
    if f.kind == STRUCT:
        return _nested(p, f, pos)
    if f.kind == ARRAY:
        return _array(p, f, pos)
    keep = (f.role != NONE or f.column >= 0 or (top and f.top >= 0) or i == s.topic_id or i == s.name)
    if _value(p, f.kind, f.nullable, f.flexible, f.bytes_as, pos, keep) != OK:
        return PURE
    if not keep or p.value is None:
        return OK
    value = p.value
    if f.role == WANTED_FIELD:
        p.fields.setdefault(p.plan.wanted[f.index], value)
    elif f.role == ERROR:
        p.has_error = True
        if value and not p.first_error:
            p.first_error = value
    elif f.role == TOPIC and isinstance(value, str):
        p.topics.append(value)
    if top and f.top >= 0:
        p.top[p.plan.top[f.top]] = value  # by its key; a null never (as extract.top_level leaves nulls out)
    if f.column >= 0:
        p.cur[f.column] = value
    return OK


cdef int _nested(Pass p, Spec* f, Py_ssize_t* pos) except -1:
    """A struct field (possibly null)."""
    cdef int8_t marker
    if f.nullable:
        if pos[0] >= p.end:
            return PURE
        marker = <int8_t> p.buf[pos[0]]
        pos[0] += 1
        if marker < 0:
            p.put(b"null", 4)
            return OK
    return _struct(p, <StructPlan> f.child, pos, False)


cdef int _array(Pass p, Spec* f, Py_ssize_t* pos) except -1:
    cdef int64_t n, k
    if _length(p, f.flexible, True, pos, &n) != OK:
        return PURE
    if n < 0:
        if n != -1 or not f.nullable:
            return PURE
        p.put(b"null", 4)
        return OK
    if n > p.end - pos[0]:
        return PURE
    p.put_char(b"[")
    cdef StructPlan child = <StructPlan> f.child if f.child != NULL else None
    for k in range(n):
        if k:
            p.put(b", ", 2)
        if f.element == STRUCT:
            if f.collect:
                _clear_columns(p, child)
            if _struct(p, child, pos, False) != OK:
                return PURE
            if f.collect == 2:
                p.rows.append(tuple(p.cur))
            continue
        if _value(p, f.element, False, f.flexible, PLAIN, pos, f.role == TOPIC_NAMES) != OK:
            return PURE
        if f.role == TOPIC_NAMES:
            p.topics.append(p.value)
    p.put_char(b"]")
    return OK


cdef void _clear_columns(Pass p, StructPlan s):
    """A new topic or partition of the collected path: its columns start as None (a `.get` of a missing key)."""
    cdef Py_ssize_t i
    for i in range(s.n):
        if s.specs[i].column >= 0:
            p.cur[s.specs[i].column] = None


cdef int _value(Pass p, int kind, bint nullable, bint flexible, int bytes_as, Py_ssize_t* pos, bint keep) except -1:
    """One scalar, string, uuid or bytes value: its JSON written, and (keep) its Python value in p.value (None
    for a null)."""
    cdef const uint8_t* b
    cdef int64_t v, n
    cdef Py_ssize_t size, start
    if kind <= INT64:
        size = _SIZES[kind]
        if size > p.end - pos[0]:
            return PURE
        b = p.buf + pos[0]
        pos[0] += size
        if kind == BOOL:
            if b[0]:
                p.put(b"true", 4)
            else:
                p.put(b"false", 5)
            if keep:
                p.value = b[0] != 0
            return OK
        if kind == INT8:
            v = <int8_t> b[0]
        elif kind == INT16:
            v = be_i16(b)
        elif kind == UINT16:
            v = be_u16(b)
        elif kind == INT32:
            v = be_i32(b)
        elif kind == UINT32:
            v = be_u32(b)
        else:
            v = be_i64(b)
        _int(p, v)
        if keep:
            p.value = v
        return OK
    if kind == UUID:
        if 16 > p.end - pos[0]:
            return PURE
        b = p.buf + pos[0]
        pos[0] += 16
        p.put_char(b'"')
        start = p.n
        _base64(p, b, 16, _B64URL)
        p.n = start + 22  # Kafka's Uuid.toString(): unpadded, 22 characters
        p.put_char(b'"')
        if keep:
            p.value = PyUnicode_DecodeUTF8(p.out + start, 22, NULL)
        return OK
    if _length(p, flexible, kind != STRING, pos, &n) != OK:
        return PURE
    if n < 0:
        if n != -1 or not nullable:
            return PURE
        p.put(b"null", 4)
        return OK
    if n > p.end - pos[0]:
        return PURE
    b = p.buf + pos[0]
    pos[0] += n
    if kind == STRING:
        if _string(p, b, n) != OK:
            return PURE
        if keep:
            p.value = PyUnicode_DecodeUTF8(<const char*> b, n, NULL)
        return OK
    if bytes_as == SECRET:
        p.put(b'{"$redacted": ', 14)
        _int(p, n)
        p.put_char(b"}")
    elif bytes_as == RECORDS:
        p.put(b'{"$records": ', 13)
        _int(p, n)
        p.put_char(b"}")
    else:
        p.put(b'{"$bytes": "', 12)
        _base64(p, b, n, _B64)
        p.put(b'"}', 2)
    if keep:
        p.value = PyBytes_FromStringAndSize(<const char*> b, n)
    return OK


cdef int _length(Pass p, bint flexible, bint wide, Py_ssize_t* pos, int64_t* n) except -1:
    """A length or count prefix: compact (unsigned varint of n + 1), int32 (wide) or int16."""
    cdef const uint8_t* b
    if flexible:
        if _uvarint(p, pos, n) != OK:
            return PURE
        n[0] -= 1
        return OK
    if wide:
        if 4 > p.end - pos[0]:
            return PURE
        b = p.buf + pos[0]
        pos[0] += 4
        n[0] = be_i32(b)
        return OK
    if 2 > p.end - pos[0]:
        return PURE
    b = p.buf + pos[0]
    pos[0] += 2
    n[0] = be_i16(b)
    return OK


cdef int _uvarint(Pass p, Py_ssize_t* pos, int64_t* value) except -1:
    """Kafka's unsigned varint: at most 5 bytes."""
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if pos[0] >= p.end:
            return PURE
        b = p.buf[pos[0]]
        pos[0] += 1
        v |= (<uint64_t> (b & 0x7F)) << shift
        if b < 0x80:
            value[0] = <int64_t> v
            return OK
        shift += 7
        if shift >= 35:
            return PURE


cdef const char* _PAIRS = (b"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                           b"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                           b"8081828384858687888990919293949596979899")


cdef int _int(Pass p, int64_t v) except -1:
    """v in decimal, two digits a division (a timestamp's 13 digits: 7 divisions, not 13)."""
    cdef char digits[24]
    cdef int i = 24
    cdef uint64_t u = <uint64_t> v if v >= 0 else (<uint64_t> 0) - <uint64_t> v
    cdef uint64_t pair
    while u >= 100:
        pair = (u % 100) * 2
        u //= 100
        i -= 2
        digits[i], digits[i + 1] = _PAIRS[pair], _PAIRS[pair + 1]
    if u >= 10:
        i -= 2
        digits[i], digits[i + 1] = _PAIRS[u * 2], _PAIRS[u * 2 + 1]
    else:
        i -= 1
        digits[i] = <char> (48 + u)
    if v < 0:
        i -= 1
        digits[i] = b"-"
    return p.put(digits + i, 24 - i)


cdef int _base64(Pass p, const uint8_t* b, Py_ssize_t n, const char* alphabet) except -1:
    """Base64 of b[:n] in `alphabet`, padded with "=" as base64.b64encode writes it."""
    cdef Py_ssize_t i = 0, need = (n + 2) // 3 * 4
    if p.n + need > p.cap:
        p.grow(need)
    cdef char* o = p.out + p.n
    cdef uint64_t w
    while i + 3 <= n:
        w = b[i] << 16 | b[i + 1] << 8 | b[i + 2]
        o[0], o[1], o[2], o[3] = alphabet[w >> 18], alphabet[(w >> 12) & 63], alphabet[(w >> 6) & 63], alphabet[w & 63]
        o += 4
        i += 3
    if n - i == 1:
        w = b[i] << 16
        o[0], o[1], o[2], o[3] = alphabet[w >> 18], alphabet[(w >> 12) & 63], b"=", b"="
        o += 4
    elif n - i == 2:
        w = b[i] << 16 | b[i + 1] << 8
        o[0], o[1], o[2], o[3] = alphabet[w >> 18], alphabet[(w >> 12) & 63], alphabet[(w >> 6) & 63], b"="
        o += 4
    p.n = o - p.out
    return OK


cdef int _string(Pass p, const uint8_t* b, Py_ssize_t n) except -1:
    """A JSON string as json.dumps(ensure_ascii=False) writes it, if b is strict UTF-8 (as bytes.decode wants)."""
    if p.n + 6 * n + 2 > p.cap:
        p.grow(6 * n + 2)
    cdef char* o = p.out + p.n
    cdef Py_ssize_t i = 0, k
    cdef uint8_t c, c1
    cdef char e
    cdef int j
    o[0] = b'"'
    o += 1
    while i < n:
        c = b[i]
        if c < 0x80:
            e = _ESCAPE[c]
            if not e:
                o[0] = c
                o += 1
            elif e == b"u":
                o[0], o[1], o[2], o[3], o[4], o[5] = b"\\", b"u", b"0", b"0", _HEX[c >> 4], _HEX[c & 15]
                o += 6
            else:
                o[0], o[1] = b"\\", e
                o += 2
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            k = 1
        elif 0xE0 <= c <= 0xEF:
            k = 2
        elif 0xF0 <= c <= 0xF4:
            k = 3
        else:
            return PURE
        if i + k >= n:
            return PURE
        c1 = b[i + 1]
        if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 > 0x9F) or (c == 0xF0 and c1 < 0x90) or \
                (c == 0xF4 and c1 > 0x8F):
            return PURE
        for j in range(1, k + 1):
            if b[i + j] & 0xC0 != 0x80:
                return PURE
        memcpy(o, b + i, k + 1)
        o += k + 1
        i += k + 1
        p.ascii = False
    o[0] = b'"'
    o += 1
    p.n = o - p.out
    return OK
