"""What a user sees when a command fails: one line on stderr and a documented exit code, never a traceback.

Every subcommand raises `CommandError` (or `UsageError`) for the failures it expects, with a message that says what
happened and what to do; `kafkatap.cli` prints it and exits with its code. Anything else is a bug: one line, and the
traceback in a file the line names (`--debug` or KAFKATAP_DEBUG=1 shows it on the terminal instead).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import NoReturn

OK = 0
FAILED = 1  # the run failed, or could not read its input
USAGE = 2  # the command line is wrong
NO_KAFKA = 3  # the capture was read and holds no Kafka traffic: nothing to analyze
INTERRUPTED = 130  # Ctrl-C or SIGTERM, as shells report 128 + SIGINT

DEBUG_ENV = "KAFKATAP_DEBUG"


class CommandError(Exception):
    """An expected failure, told in one line."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


class UsageError(CommandError):
    """A wrong command line: exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, USAGE)


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with its errors as a `UsageError` (one line) instead of usage text and a SystemExit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def debug_requested() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


Main = Callable[[list[str]], int]


def command(name: str) -> Callable[[Main], Main]:
    """Make a subcommand's main(argv) -> exit code speak to users: its failures as one line and an exit code, SIGTERM
    as Ctrl-C, `--debug` (anywhere in argv) for tracebacks. The same whether it runs as `kafkatap NAME`,
    `python -m kafkatap.NAME` or is called from a test."""
    def decorate(main: Main) -> Main:
        @wraps(main)
        def run(argv: list[str] | None = None) -> int:
            argv = list(sys.argv[1:] if argv is None else argv)
            debug = "--debug" in argv or debug_requested()
            argv = [a for a in argv if a != "--debug"]
            try:
                with terminate_as_interrupt():
                    return int(main(argv) or 0)
            except SystemExit as exc:  # argparse's --help, or a library giving up
                return exc.code if isinstance(exc.code, int) else FAILED
            except BaseException as exc:  # noqa: BLE001 - the one place every failure is turned into a line
                return report(name, exc, debug)
        return run
    return decorate


def no_space(exc: BaseException) -> bool:
    """A full disk, whether the OS said it (errno) or a library passed its text on (pyarrow, the JVM)."""
    return getattr(exc, "errno", None) == 28 or "No space left on device" in str(exc)


def write_traceback(exc: BaseException) -> str:
    """The full traceback in a file of its own, for a bug report; returns its path."""
    fd, path = tempfile.mkstemp(prefix=f"kafkatap-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".traceback.txt")
    with os.fdopen(fd, "w") as f:
        traceback.print_exception(exc, file=f)
    return path


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a command the way Ctrl-C does (KeyboardInterrupt, exit 130), so both clean up alike."""
    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def report(command: str, exc: BaseException, debug: bool) -> int:
    """Tell the user about exc in one line on stderr; returns the exit code."""
    prefix = f"kafkatap {command}"
    if isinstance(exc, CommandError):
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        print(f"{prefix}: {exc}", file=sys.stderr)
        return exc.code
    if isinstance(exc, KeyboardInterrupt):
        print(f"{prefix}: interrupted", file=sys.stderr)
        return INTERRUPTED
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
        return FAILED
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    where = write_traceback(exc)
    print(f"{prefix}: unexpected error ({type(exc).__name__}: {first}). This is a bug: please report it with the "
          f"traceback written to {where} (`--debug` shows it here)", file=sys.stderr)
    return FAILED
