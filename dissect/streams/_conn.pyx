# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twins of reassembly.Conn and reassembly._Half: the same fields and constructors, with the fields as C
struct members (_conn.pxd). The compiled driver reads about fifteen of them for every segment; as slots each read is
an attribute lookup. Also the compiled base of the reassembler, with the two counters the driver reads or adds to for
every segment."""


cdef class Half:
    """One direction: stream position `pos` sits at sequence number (base + pos) mod 2**32."""

    def __init__(self):
        self.pos = 0
        self.starts = []  # sorted stream positions of the pending pieces
        self.pending = {}  # position -> bytes, or a count of bytes the capture cut off
        self.pending_bytes = 0
        self.tail = b""
        self.strays = 0  # consecutive segments out of the window
        self.front = 0  # the stream position past the furthest byte seen, when a piece came ahead (else pos is)
        self.front_ts = 0  # when the front last moved on that way


cdef class Conn:
    """One TCP connection. Side 0 is the SYN sender (client) when syn_seen, else the sender of the first packet."""

    def __init__(self, tuple conn_key, tuple addr, bint syn_seen, ts_us):
        self.conn_key = conn_key
        self.addr = addr
        self.syn_seen = syn_seen
        self.first_ts_us = ts_us
        self.halves = (Half(), Half())
        self.last_ts_us = ts_us
        self.retransmissions = self.out_of_order = self.resets = self.zero_windows = 0  # reassembly.Conn says which

    def __repr__(self):
        return f"Conn({self.addr[0]} -> {self.addr[1]}, syn_seen={self.syn_seen})"


cdef class OrderingFields:
    """The fields of reassembly._Ordering read for every segment; _Ordering.__init__ sets them."""
