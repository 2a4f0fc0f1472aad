"""Starting the JVM of a command's SparkSession: Java and the master checked first, its output in a log file.

The JVM writes log4j lines, JDK warnings and Java stack traces to the stderr it inherits; a command that starts it
hands it a log file instead (fds 1 and 2 point at the file while pyspark spawns it), so the terminal keeps the
command's own lines, and its failures name the file. Python's logging (py4j reports its connection errors there, and
pyspark's warnings) follows to the same file. Under spark-submit, or with a session already running, no JVM starts
and nothing here applies.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafkatap.errors import CommandError
from kafkatap.pipelines.failures import exception_text, java_reason, where_logged

MASTER_TIMEOUT_S = 5.0
NO_JAVA = "Spark needs Java 17 or newer: install it (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
# What spark-submit prints when it gives up before the gateway is up (bad master, missing class, bad option)
_SUBMIT_FAILURE = re.compile(r'^(?:Exception in thread "[^"]*" |Error: )(?P<reason>.+)')


def starts_jvm() -> bool:
    """Whether getOrCreate would spawn a JVM: no gateway yet, and not started by spark-submit (which passes its
    gateway's port)."""
    return SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ


def log_path(command: str) -> str:
    """A fresh file for the JVM's output, named after the command and the time."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(tempfile.gettempdir(), "kafkatap-logs", f"{command}-{stamp}-{os.getpid()}.log")


def find_java() -> str | None:
    """The java spark-submit would run: JAVA_HOME's when set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        return java if os.access(java, os.X_OK) else None
    return shutil.which("java")


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


def launch(builder: SparkSession.Builder, master: str | None, log: str | None) -> SparkSession:
    """getOrCreate for a new JVM, writing to `log` (None: the terminal); a JVM that cannot start is one line."""
    check_java()
    check_master(master)
    try:
        if log is None:
            return builder.getOrCreate()
        with output_to(log):
            spark = builder.getOrCreate()
        python_logging_to(log)
        return spark
    except Exception as exc:  # noqa: BLE001 - the gateway's exit, a bad master URL, a JVM option Java refused
        raise CommandError(f"Spark did not start ({start_failure(exc, log)}): {where_logged(log)}") from exc
