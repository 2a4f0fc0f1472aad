"""An output folder appears whole or not at all.

A run writes into a hidden sibling of OUT and, once summary.json is written, puts it in OUT's place: a reader never
meets a half-written run, a failed run (full disk, a crash) leaves OUT as it was, and an earlier run's output is
replaced as a whole rather than mixed with the new one's tables. A streamed run (`kafkatap capture --dissect`) must
be readable while it goes, so it writes in OUT itself, after the earlier output is gone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafkatap.dissect.tables.schema import TABLES
from kafkatap.errors import CommandError, UsageError, no_space

OURS = {*TABLES, "summary.json"}
"""What a dissect output holds: a folder with anything else is not ours to replace."""
DISSECT_OUTPUT = "a kafkatap dissect output"


def check_target(out: Path, ours: set[str] = OURS, what: str = DISSECT_OUTPUT) -> None:
    """Refuse an OUT that is a file, or a folder holding anything but an earlier output (`what`, made of `ours`)."""
    if out.is_file() or (out.exists() and not out.is_dir()):
        raise UsageError(f"{out} is a file: -o takes a folder (a new one, or an earlier output to replace)")
    if out.is_dir():
        foreign = sorted(name for name in os.listdir(out) if name not in ours)
        if foreign:
            raise UsageError(f"{out} holds files that are not {what} ({', '.join(foreign[:3])}"
                             f"{', ...' if len(foreign) > 3 else ''}): choose a new folder or empty it")


@contextmanager
def staged(out: Path, ours: set[str] = OURS, what: str = DISSECT_OUTPUT) -> Iterator[Path]:
    """Yield a hidden folder beside OUT to write the run into; put it in OUT's place when the block ends, or remove
    it when the block raises (OUT untouched). OSErrors come out as one-line CommandErrors. OUT is checked first
    (`check_target`)."""
    check_target(out, ours, what)
    staging = out.with_name(f".{out.name}.kafkatap-{os.getpid()}.writing")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        yield staging
        _replace(out, staging)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _failure(out, exc) from exc
        raise


def replace_in_place(out: Path) -> None:
    """For a run that writes in OUT itself: remove an earlier output first, so no old table stays beside new ones."""
    check_target(out)
    try:
        if out.exists():
            old = _aside(out)
            os.replace(out, old)
            shutil.rmtree(old)
        out.mkdir(parents=True)
    except OSError as exc:
        raise _failure(out, exc) from exc


def _aside(out: Path) -> Path:
    return out.with_name(f".{out.name}.kafkatap-{os.getpid()}.old")


def _replace(out: Path, new: Path) -> None:
    if out.exists():
        old = _aside(out)
        os.replace(out, old)
        os.replace(new, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, out)


def _failure(out: Path, exc: OSError) -> CommandError:
    """A write that failed, as one line that says what is left."""
    if no_space(exc):
        why = "no space left on its device"
    else:
        why = f"{exc.strerror}" if exc.strerror else str(exc)
    return CommandError(f"cannot write {out}: {why}; nothing was published, {out} is as it was before the run")
