"""Stub of the compiled twin of batch_headers.split_batches (_batch_headers.pyx)."""

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records.batch import Batch

def split_batches(data: bytes | bytearray | memoryview,
                  max_decompressed: int = ...) -> tuple[list[Batch], int, DecodeError | None]: ...

def crc32c(data: bytes | bytearray | memoryview, by_table: bool = False) -> int: ...
