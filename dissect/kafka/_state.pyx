# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twins of state.Request, state.Response and state.ConnState: the same fields and constructors, with the
fields as C struct members (_state.pxd). The compiled message path reads their fields about fifty times per
request/response pair; as slots each read is an attribute lookup."""

from kafkatap.dissect.kafka.account import Account
from kafkatap.dissect.kafka.plausible import RequestSync, ResponseSync


cdef class Request:
    """A request waiting for its response, with what its row and its response's rows need."""

    def __init__(self, seq, at, size, int api_key, int api_version, int correlation_id):
        self.seq = seq
        self.capture_file, packet_index, self.ts = at
        self.packet = packet_index + 1
        self.size = size
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.known = True


cdef class Response:
    """A decoded (or undecodable) response, paired with its request."""

    def __init__(self, at, size):
        self.capture_file, packet_index, self.ts = at
        self.packet = packet_index + 1
        self.size = size


cdef class ConnState:
    """The sink's state for one connection (kept in Conn.state)."""

    def __init__(self):
        self.kind = "probe"  # probe -> kafka | tls | ignored
        self.framers = []  # by side, once Kafka
        self.req_sync = RequestSync()
        self.inflight = InFlight()
        self.resp_sync = ResponseSync(self.inflight.oldest)
        self.orphans = Orphans()
        self.sasl = SaslTokens(self.req_sync, self.resp_sync)
        self.account = Account()
        self.probe = []  # (side, ts, data or a gap's size, where)
        self.probe_bytes = 0
