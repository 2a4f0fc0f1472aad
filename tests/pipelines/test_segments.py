"""The offset sweep and its islands give exactly the runs that counting every offset one by one gives."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from pyspark.sql import functions as F

from kafkatap.pipelines.intermediates import ONE_PARTITION_BYTES, once_per_run, session_settings
from kafkatap.pipelines.transforms.duplicates.segments import islands, sweep

pytestmark = pytest.mark.spark

KEY = ["g", "p"]


def _ranges(rng: random.Random, n: int) -> list[tuple]:
    """Overlapping, touching and separate ranges over two keys and a null one; `flag` picks the second counter."""
    out = []
    for _ in range(n):
        lo = rng.randrange(0, 120)
        out.append((rng.choice(["a", "b", None]), rng.choice([0, 1]), lo, lo + rng.choice([0, 0, 1, 3, 9, 20]),
                    rng.random() < 0.4))
    return out


def _oracle(ranges: list[tuple]) -> set[tuple]:
    """Maximal runs of consecutive offsets covered at least twice, with the same (covering, flagged) counts."""
    counts: dict[tuple, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for g, p, lo, hi, flag in ranges:
        for offset in range(lo, hi + 1):
            counts[(g, p)][offset][0] += 1
            counts[(g, p)][offset][1] += int(flag)
    runs = set()
    for (g, p), by_offset in counts.items():
        run = None
        for offset in sorted(o for o, (n, _) in by_offset.items() if n >= 2):
            n, m = by_offset[offset]
            if run and offset == run[1] + 1 and (n, m) == run[2]:
                run[1] = offset
                continue
            if run:
                runs.add((g, p, run[0], run[1], *run[2]))
            run = [offset, offset, (n, m)]
        if run:
            runs.add((g, p, run[0], run[1], *run[2]))
    return runs


@pytest.mark.own_run
@pytest.mark.parametrize("input_bytes", [0, ONE_PARTITION_BYTES + 1], ids=["one partition", "exchanged by key"])
@pytest.mark.parametrize("by_key", [False, True], ids=["partitioned by every column", "ordered by key"])
def test_sweep_and_islands_equal_counting_each_offset(spark, by_key, input_bytes):
    """In a one-partition run and in a run whose sweep exchanges its edges by key (into 4 partitions)."""
    ranges = _ranges(random.Random(11), 160)
    df = spark.createDataFrame(ranges, ["g", "p", "lo", "hi", "flag"])
    # one source with a conditional weight, as the consumer and share duplicates fold their second counter
    weights = {"n": F.lit(1), "m": F.when(F.col("flag"), 1).otherwise(0)}
    same = [*KEY, "n", "m"]
    with session_settings(spark, {"spark.sql.shuffle.partitions": "4"}), once_per_run(spark, input_bytes):
        segments = sweep(KEY, (df, "lo", "hi", weights)).where(F.col("n") >= 2)
        runs = islands(segments, same, key=KEY) if by_key else islands(segments, same)
        got = {tuple(r) for r in runs.select(*KEY, "first_offset", "last_offset", "n", "m").collect()}
    want = _oracle(ranges)
    assert got == want
    assert len(want) > 20 and any(r[0] is None for r in want)  # the data really overlaps, the null key too
    # runs that touch and differ in the flagged count only: ordered by key, they must still stay apart
    starts = {(g, p, lo, n): m for g, p, lo, hi, n, m in want}
    assert any(starts.get((g, p, hi + 1, n), m) != m for g, p, lo, hi, n, m in want)
