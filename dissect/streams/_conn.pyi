"""Stub of the compiled twins of reassembly.Conn and reassembly._Half (_conn.pyx)."""

from kafkatap.dissect.streams.reassembly import Conn as Conn
from kafkatap.dissect.streams.reassembly import _Half

Half = _Half
