"""Spark's failures during a command, told in one line: what Java said (not its stack) and where Spark's log is.

Spark reports a failed job as a Py4J error wrapping a Java stack trace whose useful part is one `Caused by:` line deep
inside; `spark_failures` turns it into a `CommandError` naming that line, a full disk into "no space left", and an
error that only follows an interrupt (the JVM stopping under the same Ctrl-C or SIGTERM) back into the interrupt.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException

from kafkatap.errors import CommandError

MAX_REASON = 300
# `org.apache.spark.SparkException: ` -> the message alone; a JVM Error keeps its name (`OutOfMemoryError: ...`)
_JAVA_CLASS = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)+(?P<name>[A-Za-z_$][\w$]*): ")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?\s*$")


def java_reason(text: str) -> str:
    """The line of a Java failure worth showing: its deepest `Caused by:` (the root cause), else its first line."""
    lines = [line for line in text.splitlines() if line.strip()]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    headline = [line.removeprefix(": ") for line in lines
                if not line.startswith(("\t", " ", "An error occurred while calling"))]
    line = (causes[-1] if causes else headline[0] if headline else text).strip()
    match = _JAVA_CLASS.match(line)
    if match:
        name, message = match.group("name"), line[match.end():].strip()
        line = f"{name}: {message}" if name.endswith("Error") or not message else message
    return _SQLSTATE.sub("", line)[:MAX_REASON]


def exception_text(exc: BaseException) -> str:
    """str(exc), which for a Py4J error asks the JVM for the stack trace: its own summary when the JVM is gone."""
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # noqa: BLE001 - the JVM died: Py4J cannot fetch the Java side
        return getattr(exc, "errmsg", "") or type(exc).__name__


def where_logged(log: str | None) -> str:
    """Where the details are: the log file the JVM writes when this command started it, else Spark's own output."""
    if log and os.path.exists(log):
        return f"see Spark's log in {log}"
    return "see Spark's output for details"


def interrupted(exc: BaseException) -> bool:
    """An interrupt came before exc: Ctrl-C or SIGTERM raised KeyboardInterrupt (pyspark's and kafkatap's handlers
    both do), and exc is what a `finally` or py4j's cleanup raised on top of it, calling a JVM the same signal
    stopped. Python chains exceptions raised while handling another, so the KeyboardInterrupt is in the chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


MORE_MEMORY = 'PYSPARK_SUBMIT_ARGS="--driver-memory 4g pyspark-shell"'
"""How a user gives the driver a larger heap than Spark's 1 GB, for the commands as for pyspark."""
LOG_TAIL_BYTES = 64 << 10


def out_of_memory(text: str, log: str | None) -> str | None:
    """The out-of-memory error in a failure's text, or in the end of the log of a JVM that exited on one (started with
    -XX:+ExitOnOutOfMemoryError, `spark.one_machine_settings`: py4j then sees only a closed connection); else None."""
    tail = ""
    if log and os.path.exists(log):
        with open(log, "rb") as f:
            f.seek(max(0, os.path.getsize(log) - LOG_TAIL_BYTES))
            tail = f.read().decode(errors="replace")
    for where in (text, tail):
        match = re.search(r"(?:[\w$]+\.)*(\w*OutOfMemoryError: [^\n]*)", where)
        if match:
            return match.group(1).strip()[:MAX_REASON]
    return None


def explain(exc: BaseException, report: str, log: str | None) -> str:
    """The one line of a Spark failure while writing `report`."""
    text = exception_text(exc)
    if "No space left on device" in text:  # errors.no_space would call str(exc) again, which may need the JVM
        return (f"no space left on the device of {report}: free some, or write the report elsewhere (-o); "
                f"{where_logged(log)}")
    memory = out_of_memory(text, log)
    if memory:
        return f"Spark ran out of memory ({memory}): give its driver more, e.g. {MORE_MEMORY}; {where_logged(log)}"
    if isinstance(exc, (Py4JJavaError, CapturedException)):
        return f"Spark failed ({java_reason(text)}): {where_logged(log)}"
    return f"Spark stopped answering ({java_reason(text)}): {where_logged(log)}"


@contextmanager
def spark_failures(report: str, log: str | None) -> Iterator[None]:
    """Inside, a failed Spark job (or a JVM that died) is a `CommandError`, unless it follows an interrupt. A JVM that
    died is also a refused connection, when py4j opens a new one to it (restoring settings in a `finally`)."""
    try:
        yield
    except (Py4JError, CapturedException, ConnectionError) as exc:
        if interrupted(exc):
            raise KeyboardInterrupt from exc
        raise CommandError(explain(exc, report, log)) from exc
