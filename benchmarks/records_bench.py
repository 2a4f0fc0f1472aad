"""Speed of record data decoding: split_batches throughput and records() decode rate, per codec.

Usage: .venv/bin/python benchmarks/records_bench.py [--quick]
Batches are built by kafka-python's DefaultRecordBatchBuilder (uncompressed); the compressed variants compress the
same records section with cramjam, so the numbers need no optional codec packages.
"""

from __future__ import annotations

import struct
import sys
import time

import cramjam
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkatap.dissect.records import split_batches

HEADER = struct.Struct(">qiibIhiqqqhii")
COMPRESS = {"gzip": (1, cramjam.gzip.compress), "snappy": (2, cramjam.snappy.compress_raw),
            "lz4": (3, cramjam.lz4.compress), "zstd": (4, cramjam.zstd.compress)}


def make_batch(batch_bytes: int, value_size: int = 100) -> tuple[bytes, int]:
    """An uncompressed batch of about `batch_bytes` with keyed JSON-like records and one header each."""
    builder = DefaultRecordBatchBuilder(2, 0, False, 1000, 0, 0, 10 << 20)
    i = 0
    while builder.size() < batch_bytes - value_size - 40:
        value = (b'{"order":%d,"item":"widget","qty":%d,"note":"' % (i, i % 9)).ljust(value_size - 2, b"x") + b'"}'
        builder.append(i, 1_763_000_000_000 + i * 3, b"order-%06d" % i, value, [("trace", b"%08x" % i)])
        i += 1
    return bytes(builder.build()), i


def compressed(batch: bytes, codec: str) -> bytes:
    codec_id, compress = COMPRESS[codec]
    fields = list(HEADER.unpack_from(batch))
    body = bytes(compress(batch[HEADER.size :]))
    fields[1], fields[5] = HEADER.size - 12 + len(body), codec_id
    out = bytearray(HEADER.pack(*fields) + body)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def timed(fn, min_seconds: float) -> float:
    """CPU seconds per call (process time, so other load on a shared machine counts less), best of 3+ rounds."""
    clock = time.process_time
    best, rounds = float("inf"), 0
    start = clock()
    while clock() - start < min_seconds or rounds < 3:
        n, t0 = 0, clock()
        while clock() - t0 < min_seconds / 3:
            fn()
            n += 1
        best = min(best, (clock() - t0) / n)
        rounds += 1
    return best


def main(argv: list[str]) -> int:
    seconds = 0.3 if "--quick" in argv else 1.5
    print("split_batches (headers + crc32c, records untouched)")
    for size in (1 << 10, 100 << 10):
        batch, _ = make_batch(size)
        data = batch * max(1, (32 << 20) // len(batch))
        per_call = timed(lambda data=data: split_batches(data), seconds)
        count = len(data) // len(batch)
        print(f"  {len(batch):>7} B batches: {len(data) / per_call / 1e6:8.0f} MB/s, "
              f"{count / per_call / 1e6:6.2f} M batches/s")
    print("records() decode (100-byte values, 10-byte keys, one header)")
    for size in (1 << 10, 100 << 10):
        batch, n = make_batch(size)
        for codec in ("none", *COMPRESS):
            data = batch if codec == "none" else compressed(batch, codec)
            (parsed,), _, _ = split_batches(data)
            assert len(parsed.records()) == n
            per_call = timed(parsed.records, seconds)
            print(f"  {len(batch):>7} B batch, {codec:>6} ({len(data):>6} B on the wire): "
                  f"{n / per_call / 1e6:5.2f} M records/s, {len(batch) / per_call / 1e6:6.0f} MB/s decoded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
