"""Stub of the compiled twin of sink.on_data (_sink.pyx)."""

from kafkatap.dissect.kafka.sink import Sink
from kafkatap.dissect.streams.reassembly import Conn, Where

def on_data(sink: Sink, conn: Conn, side: int, ts: int, data: bytes, where: Where) -> bool: ...
