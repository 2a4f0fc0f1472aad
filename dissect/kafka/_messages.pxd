# Declaration of the compiled twin of messages.Messages' three per-message methods, so the compiled exchange
# (_exchange.pyx) calls the table layer's compiled rows (tables/_rows.pyx RowsFields) in C: without a method lookup,
# a partial and its argument parsing per call, and without importing the layer that writes its output.

from kafkatap.dissect.kafka._state cimport ConnState, Request, Response

cdef class Messages:
    cdef public bint compiled  # the run picked the compiled methods below (native.pick), so the exchange calls them
    cdef request(self, ConnState st, Request req, where)
    cdef response(self, ConnState st, Request req, Response resp, where)
    cdef frame(self, ConnState st, Request req, Response resp, where, bint unpaired)
