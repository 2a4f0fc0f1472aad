"""Stub of the compiled twin of batches.batch_rows (_batches.pyx)."""

from kafkatap.dissect.records import Batch
from kafkatap.dissect.tables.batches import Problem

def batch_rows(head: tuple, batches: list[Batch], tail: tuple, problem: Problem | None) -> list[tuple]: ...
