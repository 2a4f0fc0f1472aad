# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of reassembly.StreamSink's on_data (_stream_sink.pxd): the base whose C method the Kafka layer's
compiled sink overrides (kafka/_sink.pyx SinkFields), and the compiled driver calls when `compiled` is set. The streams
layer declares the method, the Kafka layer implements it: the layers' order stays as in Python, where the driver
calls whatever `StreamSink` it was given."""

from kafkatap.dissect.streams._conn cimport Conn


cdef class StreamSink:
    """Abstract: a subclass implements on_data (`compiled` is only set by one that does)."""

    cdef on_data(self, Conn conn, int side, ts, data, where):
        raise NotImplementedError
