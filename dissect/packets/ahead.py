"""Read a capture file's next chunk while the current one is dissected.

Reading is a system call that releases the GIL (and, when the file is not in the page cache, waits for the disk), so a
thread that reads one chunk ahead overlaps it with the dissection of the chunk before. The format problems the reader
finds travel with the chunk they were found before, so they are reported where a plain loop over `chunks()` reports
them, and the reader's own exceptions are raised in the consuming thread at the same point.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from kafkatap.dissect.packets.pcap import Anomaly, CaptureReader, Chunk

DEPTH = 1
"""Chunks read and waiting: one is enough to overlap, and each holds CHUNK_SIZE bytes."""

_END = object()
_POLL_S = 0.05  # how often a reader blocked on a full queue looks whether the consumer has gone


class ReadAhead:
    """(chunk, anomalies found while reading up to it) for each chunk of `reader.chunks()`, read by a thread. `rest`
    holds the anomalies found after the last chunk once iteration ends; `close` stops the thread."""

    def __init__(self, reader: CaptureReader, depth: int = DEPTH) -> None:
        self.rest: list[Anomaly] = []
        self._reader = reader
        self._queue: queue.Queue[tuple[object, list[Anomaly]]] = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="kafkatap-read-ahead", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[tuple[Chunk, list[Anomaly]]]:
        while True:
            item, anomalies = self._queue.get()
            if item is _END:
                self.rest = anomalies
                return
            if isinstance(item, Exception):
                self.rest = anomalies
                raise item
            yield item, anomalies  # type: ignore[misc]

    def close(self) -> None:
        """Stop reading (the consumer is done, or stopped early) and wait for the thread's current read to end."""
        self._stop.set()
        self._thread.join()

    def _read(self) -> None:
        try:
            for chunk in self._reader.chunks():
                if not self._put(chunk):
                    return
            self._put(_END)
        except Exception as e:  # noqa: BLE001 - raised again in the consuming thread, which reports it
            self._put(e)

    def _put(self, item: object) -> bool:
        """Hand item on with the anomalies found so far; False when the consumer has gone."""
        found = self._reader.anomalies[:]
        self._reader.anomalies.clear()
        while not self._stop.is_set():
            try:
                self._queue.put((item, found), timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False
