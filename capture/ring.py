"""The ring files of one capture run, in the order the engine wrote them, and the moment each one closes.

dumpcap (and the scapy fallback) print a file's name on stdout when they close it; tcpdump says nothing, so its
directory is polled: when a newer file appears, the previous one is closed. tcpdump's own ring (-W) rewrites old
names in place, so for tcpdump the ring is kept here: `keep` closed files, the oldest deleted first. Closed files are handed out, in order,
by `closed_paths()`, a blocking iterator the dissector consumes while the capture goes on, one file at a time.

A ring of K files deletes the oldest file when it opens a new one. With a `hold_dir` each file gets a hard link
there as soon as it appears, so a dissector that reads later still finds every file of the run (under the same
name). A held file costs disk space until the dissector is done with it (it asks for the next one) or release().
"""

from __future__ import annotations

import glob
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

HOLD_DIR = ".kafkatap-held"


@dataclass
class RingFile:
    path: str
    held: str | None = None  # the hard link that keeps the file after the ring deletes it
    size: int = 0
    closed: bool = False


class Ring:
    def __init__(self, hold_dir: str | None = None, keep: int = 0) -> None:
        self.hold_dir = hold_dir
        self.keep = keep  # >0: delete the oldest files beyond this many (for engines without a usable ring)
        self.files: list[RingFile] = []
        self._by_path: dict[str, RingFile] = {}
        self._cond = threading.Condition()
        self._finished = False

    @property
    def current(self) -> str | None:
        open_files = [f.path for f in self.files if not f.closed]
        return open_files[-1] if open_files else None

    def opened(self, path: str) -> None:
        """The engine started writing `path`."""
        with self._cond:
            if path in self._by_path:
                return
            f = RingFile(path)
            if self.hold_dir is not None:
                f.held = self._hold(path)
            self.files.append(f)
            self._by_path[path] = f

    def closed(self, path: str) -> None:
        """The engine closed `path`: it and every earlier file are complete."""
        with self._cond:
            self.opened(path)
            last = self._by_path[path]
            for f in self.files:
                if not f.closed:
                    f.closed, f.size = True, _size(f)
                if f is last:
                    break
            self._prune()
            self._cond.notify_all()

    def _prune(self) -> None:
        if not self.keep:
            return
        on_disk = [f for f in self.files if os.path.exists(f.path)]
        for f in on_disk[:max(0, len(on_disk) - self.keep)]:
            if f.closed:
                os.unlink(f.path)

    def finish(self) -> None:
        """The engine has exited: every file is complete."""
        with self._cond:
            for f in self.files:
                if not f.closed:
                    f.closed, f.size = True, _size(f)
            self._finished = True
            self._cond.notify_all()

    def _hold(self, path: str) -> str | None:
        os.makedirs(self.hold_dir, exist_ok=True)
        held = os.path.join(self.hold_dir, os.path.basename(path))
        try:
            os.link(path, held)
        except OSError:
            return None  # already rotated away: nothing left to hold
        return held

    def bytes_written(self) -> int:
        return sum(f.size if f.closed else _size(f) for f in self.files)

    def unreadable(self) -> list[str]:
        """Files of this run that are gone and not held (removed by someone else before they were seen)."""
        if self.hold_dir is None:
            return []
        return [f.path for f in self.files if f.held is None and not os.path.exists(f.path)]

    def rotated_away(self) -> list[str]:
        """Files of this run the engine's ring has deleted."""
        return [f.path for f in self.files if not os.path.exists(f.path)]

    def closed_paths(self) -> Iterator[str]:
        """Yield each complete file in write order, waiting for the engine; ends after finish(). Asking for the next
        file says the consumer is done with this one: its hold is let go (the ring may have deleted the file)."""
        index = 0
        while True:
            with self._cond:
                while not (index < len(self.files) and self.files[index].closed) and not self._finished:
                    self._cond.wait()
                if index >= len(self.files):
                    return
                f = self.files[index]
            index += 1
            path = f.held or f.path  # the link: the consumer may open it long after the ring deleted the file
            if os.path.exists(path):
                yield path
            if f.held is not None:
                _unlink(f.held)  # f.held stays set: the file was read, whatever happens to it now

    def release(self) -> None:
        """Remove the held links (the dissector is done with them)."""
        for f in self.files:
            if f.held is not None:
                _unlink(f.held)
                f.held = None
        if self.hold_dir is not None:
            try:
                os.rmdir(self.hold_dir)
            except OSError:
                pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _size(f: RingFile) -> int:
    """Current size on disk; the last size seen once the ring has deleted the file."""
    for path in filter(None, (f.path, f.held)):
        try:
            return os.path.getsize(path)
        except OSError:
            pass
    return f.size


class DirectoryWatch:
    """tcpdump's rotation seen from outside: BASE, BASE1, BASE2, ... in that order; all but the newest are closed."""

    def __init__(self, base: str, ring: Ring) -> None:
        self.base = base
        self.ring = ring
        self._seen = -1  # highest file number registered so far

    def poll(self) -> None:
        numbers = []
        for path in glob.glob(glob.escape(self.base) + "*"):
            suffix = path[len(self.base):]
            if suffix == "" or suffix.isdigit():
                numbers.append(int(suffix or 0))
        for n in sorted(n for n in numbers if n > self._seen):  # every file since the last poll, in order
            self.ring.opened(self._name(n))
            self._seen = n
        if len(self.ring.files) > 1:
            self.ring.closed(self.ring.files[-2].path)  # closes it and everything before it

    def _name(self, n: int) -> str:
        return self.base + (str(n) if n else "")
