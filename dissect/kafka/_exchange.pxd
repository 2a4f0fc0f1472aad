# Declarations of the exchange's compiled fast paths, which the compiled sink (_sink.pyx) calls in C for each frame.

from kafkatap.dissect.kafka._state cimport ConnState

cpdef request(exchange, ConnState st, at, offset, bytes payload, where)
cpdef response(exchange, ConnState st, at, offset, bytes payload, where)
