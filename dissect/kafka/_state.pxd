# Declarations of the compiled twins of state.Request, state.Response and state.ConnState (its per-connection
# classes typed, compiled from their own source), so the compiled message path
# (_exchange.pyx, _rows.pyx) reads and writes their fields as C struct members instead of by attribute lookup.

from libc.stdint cimport int64_t

from kafkatap.dissect.kafka.orphans cimport Orphans
from kafkatap.dissect.kafka.pairing cimport InFlight
from kafkatap.dissect.kafka.sasl cimport SaslTokens

cdef class Request:
    cdef public object seq, ts, capture_file, size, client_id, body, error, produce
    cdef public int64_t packet
    cdef public int api_key, api_version, correlation_id
    cdef public bint known


cdef class Response:
    cdef public object ts, capture_file, size, body, error
    cdef public int64_t packet


cdef class ConnState:
    cdef public object conn_id, client_addr, broker_addr, client_side, kind, framers, skips, req_sync, resp_sync
    cdef public object account, probe, probe_bytes, tls, tls_version
    cdef public InFlight inflight
    cdef public Orphans orphans
    cdef public SaslTokens sasl
    cdef public long long seq
