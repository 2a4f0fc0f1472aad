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


def _pairs(spark, left: list[tuple], right: list[tuple], left_range: tuple[str, str]) -> tuple[list, list]:
    """(the bucketed join's pairs, the plain range join's pairs) of ids."""
    cols = ["g", "p", "lo", "hi", "id"]
    lf, rf = spark.createDataFrame(left, cols), spark.createDataFrame(right, cols)
    got = sorted(tuple(r) for r in overlapping(lf, rf, ["g", "p"], left_range, ("lo", "hi"), "r_")
                 .select("id", "r_id").collect())
    r = rf.select(*[F.col(c).alias("r_" + c) for c in cols])
    llo, lhi = left_range
    plain = lf.join(r, F.col("g").eqNullSafe(F.col("r_g")) & (F.col("p") == F.col("r_p"))
                    & (F.col(llo) <= F.col("r_hi")) & (F.col("r_lo") <= F.col(lhi)))
    return got, sorted(tuple(r) for r in plain.select("id", "r_id").collect())


def test_bucketed_join_equals_the_plain_range_join(spark):
    rng = random.Random(7)
    got, want = _pairs(spark, _ranges(rng, 150, "l"), _ranges(rng, 150, "r"), ("lo", "hi"))
    assert got == want
    assert len(want) > 50  # the data really overlaps, wide ranges included
    wide = {i for g, p, lo, hi, i in _ranges(random.Random(7), 150, "l") if hi // BUCKET - lo // BUCKET > WIDE}
    assert wide & {i for i, _ in want}


def test_a_side_of_single_offsets_meets_wide_ranges_without_sentinel_rows(spark):
    """Points (one column for both ends, as a run's first offset) against every shape of range, the wide ones
    included: the other side then has no sentinel row for them, and still no pair is lost or counted twice."""
    rng = random.Random(11)
    left, right = _ranges(rng, 150, "l"), _ranges(rng, 150, "r")
    got, want = _pairs(spark, left, right, ("lo", "lo"))
    assert got == want
    assert len(want) > 30
    wide = {i for g, p, lo, hi, i in right if hi // BUCKET - lo // BUCKET > WIDE}
    assert wide & {j for _, j in want}
