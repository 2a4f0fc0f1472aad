"""Small real file systems for the full-disk and read-only cases: a tmpfs of a given size mounted for one test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(where: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    """Mount a tmpfs of `size` (e.g. "256k") at `where` for the block; skips the test where mounting is not
    allowed (it needs root, which CI has)."""
    where.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=1777" + (",ro" if read_only else "")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
