"""launch.wind_down_deadline: an interrupt whose handler is stuck on a JVM that stopped answering still ends it.

No Spark here: a `sleep` process stands for the JVM, and a SIGINT handler that waits for it to die stands for
pyspark's, whose py4j call to cancel the jobs would wait on the frozen JVM for good."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from types import SimpleNamespace

import pytest
from pyspark import SparkContext

from kafkatap.pipelines import launch


def _dead(proc: subprocess.Popen, within: float) -> int | None:
    deadline = time.monotonic() + within
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.poll()


class _WaitsForTheKill(logging.Handler):
    """Records whether the JVM was already dead when the warning came: waits for it up to 3 s, so a warning logged
    before the kill (which a stuck thread holding the handler's lock would block for good) records None."""

    def __init__(self, proc: subprocess.Popen) -> None:
        super().__init__()
        self.proc, self.seen = proc, []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), _dead(self.proc, 3)))


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
