# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of messages.Messages' request, response and frame (_messages.pxd): the base whose C methods the
table layer's compiled rows override (tables/_rows.pyx RowsFields), and the compiled exchange calls when `compiled`
is set. The Kafka layer declares the methods, the table layer implements them: the layers' order stays as in
Python, where the exchange calls whatever `Messages` it was given."""

from kafkatap.dissect.kafka._state cimport ConnState, Request, Response


cdef class Messages:
    """Abstract: a subclass implements the three methods (`compiled` is only set by one that does)."""

    cdef request(self, ConnState st, Request req, where):
        raise NotImplementedError

    cdef response(self, ConnState st, Request req, Response resp, where):
        raise NotImplementedError

    cdef frame(self, ConnState st, Request req, Response resp, where, bint unpaired):
        raise NotImplementedError
