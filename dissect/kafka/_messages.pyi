"""Stub of the compiled twin of messages.Messages' per-message methods (_messages.pyx): their C methods are not
visible from Python, only the flag that has the compiled exchange call them."""

class Messages:
    compiled: bool
