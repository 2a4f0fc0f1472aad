"""Stub of the compiled twin of driver.deliver (_driver.pyx)."""

from kafkatap.dissect.packets.frames import Segments
from kafkatap.dissect.streams.reassembly import Reassembler

def deliver(reasm: Reassembler, buf: bytes, index0: int, frames: int, cols: Segments, acks: object) -> None: ...
