# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of sink.on_data, with sink.feed inside it: a Kafka connection's bytes are framed here; any other
connection (being classified, TLS, ignored) goes to the pure-Python on_data. The usual segment holds exactly
one whole frame and meets a framer in step with nothing buffered: that frame is cut here, with the bookkeeping
Framer.feed does for it. So are the segments of a frame a 1,448-byte network cuts: its first, kept in the framer's
buffer, and each that continues it or completes it (`_buffered`). Any other segment goes through Framer.feed as in the
pure-Python function. Frames go to the exchange's compiled fast paths (_exchange.pyx, called in C), which hand
anything unusual to its methods."""

from cpython.bytearray cimport (PyByteArray_AS_STRING, PyByteArray_FromStringAndSize, PyByteArray_GET_SIZE,
                                PyByteArray_Resize)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy
from libc.stdint cimport int64_t, uint8_t

from kafkatap.dissect._big_endian cimport be_i32
from kafkatap.dissect.kafka._account cimport Account
from kafkatap.dissect.kafka._exchange cimport request as _request, response as _response
from kafkatap.dissect.kafka._framing cimport FramerFields
from kafkatap.dissect.kafka._state cimport ConnState
from kafkatap.dissect.kafka.skips cimport Skips
from kafkatap.dissect.streams._conn cimport Conn
from kafkatap.dissect.streams._stream_sink cimport StreamSink

from kafkatap.dissect.kafka import sink as reference  # its names are looked up at call time: it imports this module
from kafkatap.dissect.kafka.framing import MAX_FRAME
from kafkatap.dissect.kafka.plausible import REQUEST_MIN_SIZE, RESPONSE_MIN_SIZE

cdef int64_t _MAX_FRAME = MAX_FRAME
# A sync's min_size is one of these or 0 (sasl.SaslTokens): a frame of at least the largest needs no look at it
cdef int64_t _FITS_ANY_SYNC = max(REQUEST_MIN_SIZE, RESPONSE_MIN_SIZE)


cdef class SinkFields(StreamSink):
    """The field of sink.Sink that on_data reads for every segment, as a C struct member (Sink's compiled base;
    Sink.__init__ sets it). Its on_data is the compiled driver's to call in C (streams/_stream_sink.pxd): this
    module's."""
    cdef public object exchange

    cdef on_data(self, Conn conn, int side, ts, data, where):
        return _on_data(self, conn, side, ts, data, where)


def on_data(SinkFields sink not None, Conn conn not None, int side, ts, data, where):
    return _on_data(sink, conn, side, ts, data, where)


cdef _on_data(SinkFields sink, Conn conn, int side, ts, data, where):
    cdef ConnState st = conn.state
    if st is not None and st.kind == "kafka" and type(data) is bytes:
        _feed(sink.exchange, st, side, data, where)
        return True
    return reference.on_data(sink, conn, side, ts, data, where)


cdef _feed(exchange, ConnState st, int side, bytes data, where):
    cdef int direction = 0 if side == st.client_side else 1
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(data)
    cdef int64_t size
    (<Account> st.account).seen_bytes[direction] += n
    cdef FramerFields framer = st.framers[side]
    if framer is None:
        raise TypeError("a Kafka connection without its framer")
    if framer.synced and not framer.skip:
        if not framer.buf:
            if n >= 4:
                size = be_i32(b)  # the frame's size prefix
                if size + 4 == n and _fits(framer, size):
                    offset = framer.offset
                    framer.offset = offset + n
                    framer.need = 4
                    _flush_skips(st, direction)
                    _frame(exchange, st, direction, where, offset,
                           PyBytes_FromStringAndSize(<const char*> b + 4, size), where)
                    return
                if size + 4 > n and _fits(framer, size) and not framer.marks:  # a frame's start: kept, as _keep does
                    framer.buf = PyByteArray_FromStringAndSize(<const char*> b, n)
                    framer.buf_at = where
                    framer.need = size + 4
                    return
        elif _buffered(exchange, st, direction, framer, data, where):
            return
    frames = framer.feed(data, where)
    if frames:
        _handle(exchange, st, direction, frames, where)


cdef inline bint _fits(FramerFields framer, int64_t size) except -1:
    """Whether a frame of `size` bytes is one the framer's sync takes as it is (Framer._parse's check)."""
    return (size >= _FITS_ANY_SYNC or <int64_t> framer.sync.min_size <= size) and size <= _MAX_FRAME


cdef bint _buffered(exchange, ConnState st, int direction, FramerFields framer, bytes data, where) except -1:
    """What Framer.feed does, in step, with the buffered start of a frame (its first byte at buf[0], no packet mark
    inside it) and the next segment: one that falls short of what the frame needs is appended (True); one that
    completes it with nothing after it gives the frame, from the packet that carried its first byte (True).
    Anything else (False) is the Framer's: a frame whose size prefix is not buffered yet, the next frame starting in
    the segment, a size the sync refuses."""
    buf = framer.buf
    if type(buf) is not bytearray or framer.marks:
        return False
    cdef Py_ssize_t old = PyByteArray_GET_SIZE(buf), n = PyBytes_GET_SIZE(data)
    if old + n < <int64_t> framer.need:
        framer.buf += data  # as Framer.feed's `self.buf += data` (the same bytearray, extended in place)
        return True
    if old < 4:
        return False
    cdef const uint8_t* head = <const uint8_t*> PyByteArray_AS_STRING(buf)
    cdef int64_t size = be_i32(head)
    if old + n != size + 4 or not _fits(framer, size):
        return False
    payload = PyBytes_FromStringAndSize(NULL, size)
    cdef char* out = PyBytes_AS_STRING(payload)
    memcpy(out, head + 4, old - 4)
    memcpy(out + old - 4, PyBytes_AS_STRING(data), n)
    at, offset = framer.buf_at, framer.offset
    framer.offset = offset + old + n
    PyByteArray_Resize(buf, 0)
    framer.need = 4
    _flush_skips(st, direction)
    _frame(exchange, st, direction, at, offset, payload, where)
    return True


cdef _handle(exchange, ConnState st, int direction, frames, where):
    """Each frame to the exchange, once the skips reported before it are."""
    _flush_skips(st, direction)
    for at, offset, payload in frames:
        _frame(exchange, st, direction, at, offset, payload, where)


cdef _flush_skips(ConnState st, int direction):
    cdef Skips skips = st.skips[direction]
    if skips.run is not None:
        skips.flush()


cdef _frame(exchange, ConnState st, int direction, at, offset, bytes payload, where):
    """A frame to the exchange's compiled request or response path, called in C (at: the packet carrying its first
    byte)."""
    if direction == 0:
        _request(exchange, st, at, offset, payload, where)
    else:
        _response(exchange, st, at, offset, payload, where)
