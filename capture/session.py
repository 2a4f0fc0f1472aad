"""One capture run: the engine as a child process, its pipes, the ring, the dissector thread, stop conditions.

The engine runs in its own session so a terminal's Ctrl-C reaches only us; we forward one SIGINT (what dumpcap and
tcpdump treat as "flush, print statistics, exit"), so the files are closed properly whatever stopped the run.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from kafkatap.capture.engines import PREFIX, EngineLog, Spec, argv
from kafkatap.capture.ring import HOLD_DIR, DirectoryWatch, Ring
from kafkatap.capture.status import LiveStatus, Snapshot
from kafkatap.capture.trim import trim

TICK = 0.25
GRACE = 15.0  # seconds the engine gets to flush and exit after SIGINT before it is terminated
DROPS_EVERY = 2.0  # tcpdump prints its drop counts on SIGUSR1; ask this often
LOW_SPACE = 64 * 1024  # below this many free bytes the disk counts as full: tcpdump ignores ENOSPC and goes on

OnProgress = Callable[[int, int], None]  # (Kafka messages dissected, capture bytes read) so far
Dissect = Callable[[Iterable[str], OnProgress], dict]  # the ring's files, in order, each once closed


@dataclass
class Outcome:
    returncode: int
    stopped_by: str  # "signal SIGINT", "duration", "engine exit", ...
    elapsed: float
    log: EngineLog
    ring: Ring
    rotated_away: list[str]
    trimmed: dict[str, int] = field(default_factory=dict)  # file -> bytes cut from its end
    dissect_summary: dict | None = None
    dissect_error: str | None = None
    parquet_before_end: int | None = None  # Parquet files the dissector had published when the engine stopped
    unreadable: list[str] = field(default_factory=list)  # files of the run gone before the dissector could hold them


class EngineStartError(RuntimeError):
    """The engine's program could not be started at all (not executable by this user, vanished from PATH)."""


class Session:
    def __init__(self, engine: str, binary: str | None, spec: Spec, dissect: Dissect | None = None,
                 dissect_out: str | None = None) -> None:
        self.engine, self.spec, self.dissect, self.dissect_out = engine, spec, dissect, dissect_out
        # The ring deletes files; the dissector must see every one. Engines delete a file within the same batch of
        # packets that opened its successors, before they have said so, so then the ring is kept here: each file is
        # held (hard link) when it appears, the oldest deleted after. tcpdump's own ring (-W) rewrites names in place.
        held = dissect is not None and spec.ring_files > 0
        ours = held or engine == "tcpdump"
        self.cmd = argv(engine, binary, replace(spec, ring_files=0) if ours else spec)
        self.ring = Ring(os.path.join(spec.out_dir, HOLD_DIR) if held else None,
                         keep=spec.ring_files if ours else 0)
        self.log = EngineLog(on_file=self.ring.opened)
        self.stop_signal: int | None = None
        self._dissect_result: dict | None = None
        self._dissect_error: str | None = None
        self.dissected: tuple[int, int] | None = None  # (messages, bytes) the dissector has done, once it started

    def _on_signal(self, signum: int, frame) -> None:
        if self.stop_signal is not None:
            raise KeyboardInterrupt  # a second Ctrl-C: stop waiting
        self.stop_signal = signum

    def run(self) -> Outcome:
        handlers = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        status = LiveStatus()
        try:
            return self._run(status)
        finally:
            status.stop()
            self.ring.release()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)

    def _run(self, status: LiveStatus) -> Outcome:
        env = dict(os.environ, LC_ALL="C")  # English messages: they are parsed
        try:
            proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, env=env)
        except OSError as exc:
            raise EngineStartError(f"cannot start {self.cmd[0]}: {exc.strerror}") from None
        try:
            return self._supervise(proc, status)
        finally:
            if proc.poll() is None:  # we are leaving early (a second Ctrl-C): never leave an orphan engine
                _signal(proc, signal.SIGINT)
                try:
                    proc.wait(GRACE)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def _supervise(self, proc: subprocess.Popen, status: LiveStatus) -> Outcome:
        readers = [threading.Thread(target=self._read_stderr, args=(proc,), daemon=True),
                   threading.Thread(target=self._read_closed, args=(proc,), daemon=True)]
        for t in readers:
            t.start()
        watch = DirectoryWatch(os.path.join(self.spec.out_dir, PREFIX + ".pcap"), self.ring) \
            if self.engine == "tcpdump" else None
        dissector: threading.Thread | None = None
        start = time.monotonic()
        stopped_by, interrupted_at, killed = "engine exit", None, False
        last_drops = start
        while proc.poll() is None:
            time.sleep(TICK)
            now = time.monotonic()
            if watch is not None:
                watch.poll()
            if dissector is None and self.dissect is not None and self.ring.files:
                dissector = threading.Thread(target=self._dissect, daemon=True)
                dissector.start()
            if interrupted_at is None:
                if self.stop_signal is not None:
                    stopped_by = f"signal {signal.Signals(self.stop_signal).name}"
                elif self.spec.duration and now - start >= self.spec.duration and self.engine != "dumpcap":
                    stopped_by = "duration"
                elif free_bytes(self.spec.out_dir) < LOW_SPACE:
                    stopped_by = "disk full"
                if stopped_by != "engine exit":
                    interrupted_at = now
                    _signal(proc, signal.SIGINT)
            elif now - interrupted_at > GRACE and not killed:
                _signal(proc, signal.SIGKILL)
                killed = True
            if self.engine == "tcpdump" and now - last_drops >= DROPS_EVERY and interrupted_at is None:
                _signal(proc, signal.SIGUSR1)
                last_drops = now
            status.update(self.snapshot(now - start))
        for t in readers:
            t.join(timeout=5)
        self.log.close()
        if watch is not None:
            watch.poll()
        if stopped_by == "engine exit":
            if self.spec.duration and time.monotonic() - start >= self.spec.duration - 1:
                stopped_by = "duration"
            elif self.spec.packets and self.log.packets >= self.spec.packets:
                stopped_by = "packet count"
        parquet_before_end = _count_parquet(self.dissect_out) if self.dissect_out else None
        trimmed = self._trim() if proc.returncode != 0 or killed or stopped_by == "disk full" else {}
        self.ring.finish()
        elapsed = time.monotonic() - start
        if dissector is None and self.dissect is not None and self.ring.files:
            dissector = threading.Thread(target=self._dissect, daemon=True)
            dissector.start()
        status.update(self.snapshot(elapsed))
        if dissector is not None:
            while dissector.is_alive():  # the files written since the dissector last caught up
                dissector.join(TICK)
                status.update(self.snapshot(elapsed))
        return Outcome(proc.returncode, stopped_by, elapsed, self.log, self.ring, self.ring.rotated_away(), trimmed,
                       self._dissect_result, self._dissect_error, parquet_before_end,
                       self.ring.unreadable())

    def snapshot(self, elapsed: float) -> Snapshot:
        messages, dissected = self.dissected or (None, None)
        return Snapshot(self.engine, self.spec.iface, self.spec.bpf, elapsed, self.log.packets,
                        self.ring.bytes_written(), len(self.ring.files), self.ring.current or self.log.current_file,
                        self.log.dropped, self.log.if_dropped, messages, dissected)

    def _read_stderr(self, proc: subprocess.Popen) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a chunk may end inside a character
        while chunk := proc.stderr.read1(65536):
            self.log.feed(decoder.decode(chunk))

    def _read_closed(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            path = line.decode("utf-8", "replace").strip()
            if path:
                self.ring.closed(path)

    def _dissect(self) -> None:
        try:
            self.dissected = (0, 0)
            self._dissect_result = self.dissect(self.ring.closed_paths(), self._on_dissect_progress)
        except Exception as exc:  # reported in the summary, never lost: the capture files are intact
            self._dissect_error = f"{type(exc).__name__}: {exc}"

    def _on_dissect_progress(self, messages: int, nbytes: int) -> None:
        self.dissected = (messages, nbytes)  # one assignment: the status thread reads a consistent pair

    def _trim(self) -> dict[str, int]:
        """After an abnormal exit, cut any half-written packet from the end of this run's files."""
        cut = {}
        for f in self.ring.files:
            if os.path.exists(f.path):
                removed = trim(f.path)
                if removed:
                    cut[f.path] = removed
        return cut


def free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _count_parquet(root: str) -> int:
    return sum(name.endswith(".parquet") for _, _, names in os.walk(root) for name in names)


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass
