"""Ctrl-C and SIGTERM as a request to stop: the run ends at its next chunk and publishes what it has read.

The first signal sets an Event the run checks between chunks (a second or so on a busy core); a second signal
raises KeyboardInterrupt, for a user who wants out at once, and then nothing is published.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from threading import Event

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signal() -> Iterator[Event]:
    """Yield the Event the first SIGINT/SIGTERM sets; the handlers are put back when the block ends."""
    stop = Event()

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    old = {sig: signal.signal(sig, on_signal) for sig in SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
