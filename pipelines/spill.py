"""A Spark partition's pieces put back in capture order without holding them all: runs of pieces sorted in memory
up to a budget, spilled to local files, and merged (heapq.merge) as they are read back."""

from __future__ import annotations

import heapq
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

BUDGET = 256 << 20
"""Bytes of pieces held in memory before a sorted run is written out."""


@contextmanager
def in_order(pieces: Iterable[tuple[Any, Any]], size: Any, budget: int = BUDGET) -> Iterator[Iterator[tuple]]:
    """The (key, value) pairs sorted by key; size(value) says what a value costs in memory. The spilled runs live
    in a temp folder removed when the block ends."""
    folder = tempfile.mkdtemp(prefix="kafkatap-spill-")
    try:
        held: list[tuple[Any, Any]] = []
        runs: list[str] = []
        total = 0
        for key, value in pieces:
            held.append((key, value))
            total += size(value)
            if total > budget:
                runs.append(_spill(folder, len(runs), sorted(held, key=_key)))
                held, total = [], 0
        held.sort(key=_key)
        yield heapq.merge(*(_read(path) for path in runs), iter(held), key=_key)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _key(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _spill(folder: str, n: int, pairs: list[tuple[Any, Any]]) -> str:
    path = os.path.join(folder, f"run-{n:05d}")
    with open(path, "wb") as f:
        for pair in pairs:
            pickle.dump(pair, f, pickle.HIGHEST_PROTOCOL)
    return path


def _read(path: str) -> Iterator[tuple[Any, Any]]:
    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return
