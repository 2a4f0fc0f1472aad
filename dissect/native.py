"""The one switch between the compiled dissector core and the pure-Python dissector, decided once per process.

The compiled core is a set of Cython modules (`_*.pyx` beside the modules they speed up, built by `pip install`),
each function the twin of a pure-Python one of the same name: same arguments, same results. The pure-Python functions
stay the reference the tests hold the twins to. KAFKATAP_PURE_PYTHON=1 runs them; without it, an install that could
not compile the core (no C compiler) runs them too, and says so once on stderr: slower, never different.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

ENV = "KAFKATAP_PURE_PYTHON"
SAID = "KAFKATAP_NOT_BUILT_SAID"  # set once NOT_BUILT is said, so that spawned worker processes keep quiet
EXTENSIONS = ("kafkatap.dissect.packets._frames", "kafkatap.dissect.packets._packet_records",
              "kafkatap.dissect.records._batch_headers",
              "kafkatap.dissect.streams._conn", "kafkatap.dissect.streams._driver",
              "kafkatap.dissect.streams._stream_sink",
              "kafkatap.dissect.kafka._sink", "kafkatap.dissect.kafka._framing", "kafkatap.dissect.kafka._account",
              "kafkatap.dissect.kafka._exchange", "kafkatap.dissect.kafka._messages",
              "kafkatap.dissect.kafka._bodies", "kafkatap.dissect.kafka._found", "kafkatap.dissect.kafka._state",
              "kafkatap.dissect.tables._rows",
              "kafkatap.dissect.tables._columns")
COMPILED_SOURCES = ("kafkatap.dissect.kafka.pairing", "kafkatap.dissect.kafka.orphans", "kafkatap.dissect.kafka.sasl",
                    "kafkatap.dissect.kafka.skips", "kafkatap.dissect.tables.frames_row",
                    "kafkatap.dissect.tables.batch_row", "kafkatap.dissect.tables.batches",
                    "kafkatap.dissect.records.batch", "kafkatap.dissect.records.record_batch")
"""Plain-Python modules setup.py also compiles (a .py with a .pxd of its name): one source both paths run, so they are
no twins to pick between, but a built core holds an extension module for each."""
NOT_BUILT = "kafkatap: the compiled dissector core is not built; running the pure-Python dissector (slower)"

F = TypeVar("F", bound=Callable)


def pure_requested() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def missing() -> dict[str, str]:
    """The compiled modules that do not import, with the reason (empty when the core is built)."""
    errors = {}
    for name in EXTENSIONS:
        try:
            importlib.import_module(name)
        except ImportError as e:
            errors[name] = str(e)
    return errors


def built() -> bool:
    """Whether every compiled module is installed. Found, not imported: importing them here would import the
    packages that load them (and read their names) before those packages exist."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in EXTENSIONS)
    except ImportError:  # an import hook, or a parent package, that refuses
        return False


def _decide() -> bool:
    if pure_requested():
        return False
    if not built():
        if not os.environ.get(SAID):
            print(NOT_BUILT, file=sys.stderr)
            os.environ[SAID] = "1"
        return False
    return True


def extension(name: str) -> ModuleType | None:
    """The compiled module `name`, or None when it is not built (`pick` then returns the pure-Python twin)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def pick(pure: F, extension: ModuleType | None) -> F:
    """pure's compiled twin (the function of the same name in extension) when the compiled core runs, else pure."""
    return getattr(extension, pure.__name__) if compiled and extension is not None else pure


compiled: bool = _decide()
"""Whether the twins run; read at every call of `pick`, so a test can set it to run either path in one process.
Decided last, when `extension` exists: the compiled modules import the packages that load them."""
