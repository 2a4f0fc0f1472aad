"""The bucketed range join gives exactly the pairs a plain range join gives: none lost, none twice."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.ranges import BUCKET, WIDE, overlapping

pytestmark = pytest.mark.spark


def _ranges(rng: random.Random, n: int, tag: str) -> list[tuple]:
    """Ranges of every shape: single offsets, ones crossing bucket edges, wide ones, across two keys and a null key."""
    out = []
    for i in range(n):
        lo = rng.choice([rng.randrange(0, 4 * BUCKET), BUCKET - 1, 2 * BUCKET - 3, rng.randrange(0, 300 * BUCKET)])
        length = rng.choice([0, 1, 5, BUCKET, 3 * BUCKET, (WIDE + 2) * BUCKET])
        out.append((rng.choice(["a", "b", None]), rng.choice([0, 1]), lo, lo + length, f"{tag}{i}"))
    return out


def test_bucketed_join_equals_the_plain_range_join(spark):
    rng = random.Random(7)
    cols = ["g", "p", "lo", "hi", "id"]
    left = spark.createDataFrame(_ranges(rng, 150, "l"), cols)
    right = spark.createDataFrame(_ranges(rng, 150, "r"), cols)
    got = sorted(tuple(r) for r in overlapping(left, right, ["g", "p"], ("lo", "hi"), ("lo", "hi"), "r_")
                 .select("id", "r_id").collect())
    r = right.select(*[F.col(c).alias("r_" + c) for c in cols])
    plain = left.join(r, F.col("g").eqNullSafe(F.col("r_g")) & (F.col("p") == F.col("r_p"))
                      & (F.col("lo") <= F.col("r_hi")) & (F.col("r_lo") <= F.col("hi")))
    want = sorted(tuple(r) for r in plain.select("id", "r_id").collect())
    assert got == want
    assert len(want) > 50  # the data really overlaps, wide ranges included
    wide = {i for g, p, lo, hi, i in _ranges(random.Random(7), 150, "l") if hi // BUCKET - lo // BUCKET > WIDE}
    assert wide & {i for i, _ in want}
