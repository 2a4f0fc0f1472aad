"""Stub of the compiled twin of reassembly.StreamSink's on_data (_stream_sink.pyx): its C method is not visible from
Python, only the flag that has the compiled driver call it."""

class StreamSink:
    compiled: bool
