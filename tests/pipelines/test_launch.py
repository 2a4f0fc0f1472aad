"""launch.wind_down_deadline: an interrupt whose handler is stuck on a JVM that stopped answering still ends it.

No Spark here: a `sleep` process stands for the JVM, and a SIGINT handler that waits for it to die stands for
pyspark's, whose py4j call to cancel the jobs would wait on the frozen JVM for good."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark import SparkContext

from kafkatap.pipelines import launch


def _within(seconds: float, check: Callable[[], object]) -> bool:
    """Whether `check()` comes true within `seconds`."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _dead(proc: subprocess.Popen, within: float) -> int | None:
    _within(within, lambda: proc.poll() is not None)
    return proc.poll()


class _WaitsForTheKill(logging.Handler):
    """Records whether the JVM was already dead when the warning came: waits for it up to 3 s, so a warning logged
    before the kill (which a stuck thread holding the handler's lock would block for good) records None."""

    def __init__(self, proc: subprocess.Popen) -> None:
        super().__init__()
        self.proc, self.seen = proc, []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), _dead(self.proc, 3)))


class _Recorder(logging.Handler):
    """The messages logged, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.messages = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_the_jvm_is_killed_after_the_deadline_before_it_is_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    jvm = subprocess.Popen(["sleep", "60"])
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=jvm), raising=False)
    monkeypatch.setattr(launch, "WIND_DOWN_S", 0.2)
    recorder = _WaitsForTheKill(jvm)
    launch.logger.addHandler(recorder)

    def pyspark_handler(signum: int, frame: object) -> None:
        _dead(jvm, 20)  # cancelling the jobs on a JVM that does not answer: it returns once the JVM is gone
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, pyspark_handler)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt), launch.wind_down_deadline():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(20)
        assert signal.getsignal(signal.SIGINT) is pyspark_handler  # restored on the way out
        ended = jvm.poll()  # before the clean-up below kills it in any case
    finally:
        signal.signal(signal.SIGINT, previous)
        jvm.kill()
        jvm.wait()
    assert time.monotonic() - started < 10
    assert ended == -signal.SIGKILL
    for _ in range(300):  # the clock thread logs just after the kill
        if recorder.seen:
            break
        time.sleep(0.01)
    launch.logger.removeHandler(recorder)
    assert recorder.seen == [(f"the JVM (pid {jvm.pid}) had not wound down 0 s after the interrupt: killed",
                              -signal.SIGKILL)]


def test_a_block_that_ends_in_time_kills_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    jvm = subprocess.Popen(["sleep", "60"])
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=jvm), raising=False)
    monkeypatch.setattr(launch, "WIND_DOWN_S", 0.2)
    try:
        with launch.wind_down_deadline():
            pass
        time.sleep(0.5)
        assert jvm.poll() is None
    finally:
        jvm.kill()
        jvm.wait()


def test_a_signal_the_main_thread_does_not_see_still_starts_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race of a CI run: the signal came just before the main thread blocked waiting for the JVM (for a job that
    waits on it), so its Python handler runs only once that wait ends, and the wait ends only when the JVM dies.
    Here the main thread blocks SIGINT and waits for the JVM; another thread sends the signal once the kernel shows
    the main thread in that wait, so that thread takes it and the main thread's wait goes on."""
    jvm = subprocess.Popen(["sleep", "10"])
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=jvm), raising=False)
    monkeypatch.setattr(launch, "WIND_DOWN_S", 0.2)
    logged = _Recorder()
    launch.logger.addHandler(logged)
    main, seen_waiting = threading.get_native_id(), []

    def interrupt_the_wait() -> None:
        wchan = Path(f"/proc/self/task/{main}/wchan")  # the kernel's wait for a child (waitpid): "do_wait"
        seen_waiting.append(_within(5, lambda: wchan.read_text() == "do_wait"))
        os.kill(os.getpid(), signal.SIGINT)

    def pyspark_handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, pyspark_handler)
    try:
        with pytest.raises(KeyboardInterrupt), launch.wind_down_deadline():
            threading.Thread(target=interrupt_the_wait).start()  # before the mask below: it may take SIGINT
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            jvm.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, previous)
        jvm.kill()
        jvm.wait()
        _within(5, lambda: logged.messages)  # the clock logs just after the kill
        launch.logger.removeHandler(logged)
    assert seen_waiting == [True]
    # the old clock heard of the signal only when the JVM had ended by itself: nothing to kill
    assert logged.messages == [f"the JVM (pid {jvm.pid}) had not wound down 0 s after the interrupt: killed"]


def test_a_wakeup_fd_set_before_gets_every_signal_and_is_set_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An asyncio loop (pyshark's, in the tests' own process) reads the signals from its wakeup fd: during the block
    it still gets every signal's number, the deadline holds as without it, and the fd is its own again after."""
    jvm = subprocess.Popen(["sleep", "60"])
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=jvm), raising=False)
    monkeypatch.setattr(launch, "WIND_DOWN_S", 0.2)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous_fd = signal.set_wakeup_fd(write_end)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)  # asyncio's: the loop acts on the fd
    try:
        with launch.wind_down_deadline():
            os.kill(os.getpid(), signal.SIGINT)
            assert _dead(jvm, 5) == -signal.SIGKILL
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.set_wakeup_fd(previous_fd) == write_end
        os.set_blocking(read_end, False)
        passed_on = bytearray()

        def both_passed_on() -> bool:  # the clock passes on what it read, until the pipe's end
            with contextlib.suppress(BlockingIOError):
                passed_on.extend(os.read(read_end, 64))
            return passed_on.count(signal.SIGINT) == 2  # beside SIGCHLD's where asyncio watches children

        assert _within(5, both_passed_on)
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous)
        os.close(read_end)
        os.close(write_end)
        jvm.kill()
        jvm.wait()
