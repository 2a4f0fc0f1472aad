# Declaration of the compiled twin of extract.Found, so the compiled body reader (_bodies.pyx) fills it and the
# compiled message path (_exchange.pyx, _rows.pyx) reads it as C struct members instead of by attribute lookup.

cdef class Found:
    cdef public dict fields
    cdef public list topics, topic_ids, id_names
    cdef public long long first_error
    cdef public bint has_error
