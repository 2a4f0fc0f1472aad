"""Starting the JVM of a command's SparkSession: Java and the master checked first, its output in a log file.

The JVM writes log4j lines, JDK warnings and Java stack traces to the stderr it inherits; a command that starts it
hands it a log file instead (fds 1 and 2 point at the file while pyspark spawns it), so the terminal keeps the
command's own lines, and its failures name the file. Python's logging (py4j reports its connection errors there, and
pyspark's warnings) follows to the same file. Under spark-submit, or with a session already running, no JVM starts
and nothing here applies.

After an interrupt the command waits for its jobs to wind down, and they wait for the JVM: a JVM this command
started that stops answering then would hold the command for good, so it is killed after `WIND_DOWN_S`
(`wind_down_deadline`).
"""

from __future__ import annotations

import logging
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from kafkatap.errors import CommandError
from kafkatap.pipelines import class_lookups
from kafkatap.pipelines.failures import exception_text, java_reason, where_logged

MASTER_TIMEOUT_S = 5.0
WIND_DOWN_S = 10.0
"""How long an interrupted run may take to wind down before the JVM it started is killed: a run's jobs end within
about a second of Ctrl-C or SIGTERM on the bundled sample (loaded two-core machine); a CI run's command, given SIGTERM,
was still up 120 s later, and a JVM frozen by SIGSTOP would be waited on for good."""
_INTERRUPTS = frozenset((signal.SIGINT, signal.SIGTERM))
NO_JAVA = "Spark needs Java 17 or newer: install it (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
# What spark-submit prints when it gives up before the gateway is up (bad master, missing class, bad option)
_SUBMIT_FAILURE = re.compile(r'^(?:Exception in thread "[^"]*" |Error: )(?P<reason>.+)')
logger = logging.getLogger(__name__)


def starts_jvm() -> bool:
    """Whether getOrCreate would spawn a JVM: no gateway yet, and not started by spark-submit (which passes its
    gateway's port)."""
    return SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ


def log_path(command: str) -> str:
    """A fresh file for the JVM's output, named after the command and the time."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(tempfile.gettempdir(), "kafkatap-logs", f"{command}-{stamp}-{os.getpid()}.log")


def find_java(tool: str = "java") -> str | None:
    """The java spark-submit would run, or another tool of the same JDK (javac): JAVA_HOME's when set, else the one
    on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        path = os.path.join(home, "bin", tool)
        return path if os.access(path, os.X_OK) else None
    return shutil.which(tool)


def check_java() -> None:
    """Before spark-submit's script fails on it with a shell error."""
    if find_java() is None:
        home = os.environ.get("JAVA_HOME")
        raise CommandError(NO_JAVA if not home else f"{NO_JAVA} (JAVA_HOME={home} has no bin/java)")


def check_master(master: str | None) -> None:
    """A standalone master (`spark://host:port[,host:port]`) must accept a connection: Spark itself retries a dead
    one for a minute before giving up."""
    if not master or not master.startswith("spark://"):
        return
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_TIMEOUT_S).close()
            return
        except (OSError, ValueError):
            continue
    raise CommandError(f"Spark did not start (no Spark master answers at {master}): start it, or give another "
                       "--master")


@contextmanager
def output_to(log: str) -> Iterator[None]:
    """Fds 1 and 2 point at `log` while inside, so a process spawned here writes there for good."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)  # appends: Python's logging writes here too
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for each in (fd, *saved):
            os.close(each)


def python_logging_to(log: str) -> None:
    """py4j logs a dying connection (with a traceback) and pyspark warns through Python's logging, which would print
    on the terminal: they go to the JVM's log instead."""
    handler = logging.FileHandler(log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.captureWarnings(True)


def start_failure(exc: BaseException, log: str | None) -> str:
    """Why the JVM did not come up: spark-submit's own complaint in the log when it exited early, else the
    exception's."""
    reason = None
    if log and os.path.exists(log):
        with open(log, errors="replace") as f:
            reason = next((m.group("reason") for m in map(_SUBMIT_FAILURE.match, f) if m), None)
    return java_reason(reason or exception_text(exc))


def launch(builder: SparkSession.Builder, master: str | None, log: str | None,
           conf: SparkConf | None = None) -> SparkSession:
    """getOrCreate for a new JVM, writing to `log` (None: the terminal); a JVM that cannot start is one line. `conf`,
    the builder's settings, when they load kafkatap's JVM classes (`jvm_jar`): the JVM then starts first, so that the
    thread starting the SparkContext has `class_lookups`' loader before it does."""
    check_java()
    check_master(master)
    try:
        with output_to(log) if log is not None else nullcontext():
            if conf is not None:
                SparkContext._ensure_initialized(conf=conf)  # what getOrCreate does first, with the same settings
                class_lookups.starting()
            spark = builder.getOrCreate()
        if log is not None:
            python_logging_to(log)
        return spark
    except Exception as exc:  # noqa: BLE001 - the gateway's exit, a bad master URL, a JVM option Java refused
        raise CommandError(f"Spark did not start ({start_failure(exc, log)}): {where_logged(log)}") from exc


@contextmanager
def wind_down_deadline() -> Iterator[None]:
    """Inside, Ctrl-C or SIGTERM also starts a clock: if the block has not ended `WIND_DOWN_S` later, the JVM this
    process started is killed, so the calls that wait on it fail at once and the interrupt ends the command (the
    py4j calls that cancel the jobs, restore settings and end the job threads have no timeout of their own). The
    signals' own handlers (pyspark's for SIGINT, `errors.terminate_as_interrupt`'s) run as before. Only in the main
    thread of a process that started its JVM (not under spark-submit, whose JVM is the parent).

    The clock hears of the signal through Python's wakeup fd, written by the C-level handler the moment the signal
    arrives, not through a Python handler: that one runs only when the main thread next runs Python code, and a
    main thread that took the signal just before it blocked (waiting for a job, which waits for the frozen JVM)
    never does (a CI run's command hung so, with no kill logged). A wakeup fd set before (an asyncio loop's, such as
    pyshark's) gets every signal number passed on, and is set again at the end."""
    gateway = SparkContext._gateway
    if getattr(gateway, "proc", None) is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_clock, args=(read_end, previous, gateway.proc), name="kafkatap-wind-down",
                     daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)  # first: no handler writes to the pipe once it is closed
        os.close(write_end)  # the clock reads the end of the pipe: the block's end


def _clock(read_end: int, passed_on: int, proc: subprocess.Popen) -> None:
    """Read the signal numbers the wakeup fd gets until the block ends (the pipe's end), passing each on to the
    wakeup fd set before (-1: none); kill the JVM `WIND_DOWN_S` after the first SIGINT or SIGTERM unless the block
    ends first. `poll`, not `select`: a session's process may hold more than 1,024 fds."""
    poller = select.poll()
    poller.register(read_end, select.POLLIN)
    deadline = None
    try:
        while True:
            if not poller.poll(None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000):
                _end_jvm(proc)
                deadline = None
                continue
            numbers = os.read(read_end, 512)
            if not numbers:
                return
            if passed_on != -1:
                with suppress(OSError):  # its owner's buffer is full, or it closed it without saying so
                    os.write(passed_on, numbers)
            if deadline is None and _INTERRUPTS.intersection(numbers):
                deadline = time.monotonic() + WIND_DOWN_S
    finally:
        os.close(read_end)


def _end_jvm(proc: subprocess.Popen) -> None:
    """Kill the JVM unless it has ended, then say so in the log (Python's logging goes to the JVM's log file): killed
    first, since a thread stuck on the JVM may hold the logging handler's lock until the JVM is gone."""
    if proc.poll() is None:
        proc.kill()
        logger.warning("the JVM (pid %d) had not wound down %.0f s after the interrupt: killed", proc.pid, WIND_DOWN_S)
