# Declaration of the compiled twin of reassembly.StreamSink's on_data, so the compiled driver (_driver.pyx) hands each
# segment's bytes to the Kafka layer's compiled sink (kafka/_sink.pyx SinkFields) in C: without a partial and argument
# parsing per segment, and without importing the layer above.

from kafkatap.dissect.streams._conn cimport Conn

cdef class StreamSink:
    cdef public bint compiled  # the run picked the compiled on_data below (native.pick), so the driver calls it
    cdef on_data(self, Conn conn, int side, ts, data, where)
