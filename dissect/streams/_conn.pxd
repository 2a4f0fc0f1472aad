# Declarations of the compiled twins of reassembly.Conn and reassembly._Half, and of the compiled base of the
# reassembler, so the compiled driver (_driver.pyx) and Kafka sink (_sink.pyx) read and write their fields as C struct
# members instead of by attribute lookup.

cdef class Half:
    cdef public object base, isn, pos, starts, pending, pending_bytes, fin_pos, tail, strays, front, front_ts


cdef class Conn:
    cdef public object conn_key, addr, first_ts_us, state, halves, last_ts_us
    cdef public object retransmissions, out_of_order, resets, zero_windows, syn_ts_us, handshake_rtt_us
    cdef public bint syn_seen, opened, closed, ignored


cdef class OrderingFields:
    cdef public object pending_total
    cdef public long long payload_bytes  # stream bytes delivered: added to for every segment, in C
    cdef public long long keys_version  # Reassembler's count of changes to its keys dict
