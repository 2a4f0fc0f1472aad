"""Stub of the compiled twins of reassembly.Conn and reassembly._Half, and of the reassembler's compiled base
(_conn.pyx)."""

from kafkatap.dissect.streams.reassembly import Conn as Conn
from kafkatap.dissect.streams.reassembly import _Half

Half = _Half

class OrderingFields:
    pending_total: int
    payload_bytes: int
    keys_version: int
