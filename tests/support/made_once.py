"""An output several test files of one `pytest` run read, made once for the run: by whichever of pytest-xdist's
processes asks first, while the others wait for it (pytest-xdist's recipe for a session fixture that runs once). A
fixture's own `scope="session"` is once per process, and `make test` runs two."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".made"
"""Written last: a folder without it is what a failed or interrupted attempt left, and is made again."""


def made_once(tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str,
              make: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `make(folder)` the first time any process of this run asks for it. worker_id:
    xdist's fixture of that name ("master" in a run without workers)."""
    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent  # a worker's folder is in the run's, beside the others'
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when this process dies
        if not (folder / DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / DONE).touch()
    return folder
