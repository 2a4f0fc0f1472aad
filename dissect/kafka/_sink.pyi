"""Stub of the compiled twin of sink.on_data and of Sink's compiled base (_sink.pyx)."""

from kafkatap.dissect.kafka.exchange import Exchange
from kafkatap.dissect.kafka.sink import Sink
from kafkatap.dissect.streams._stream_sink import StreamSink
from kafkatap.dissect.streams.reassembly import Conn, Where

class SinkFields(StreamSink):
    exchange: Exchange

def on_data(sink: Sink, conn: Conn, side: int, ts: int, data: bytes, where: Where) -> bool: ...
