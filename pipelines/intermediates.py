"""How a run keeps Spark's plans small: intermediates computed once, and small inputs in one partition.

Spark's cost on a capture's tables is planning and scheduling, not computing. Before this, every output table inlined
the members' frames, the ownership intervals and the epoch streams it needed, so one run of the bundled sample
planned and executed them dozens of times, in plans of up to 650 KB, and adaptive execution ran every shuffle of
them as a Spark job of its own (374 jobs for 36 tables). Two rules remove that:

- Inside `once_per_run()`, a function marked `@intermediate` runs once per set of input DataFrames and its rows are
  materialized (`materialize`): every later caller, in the same job or a later one, gets a plan whose leaf is those
  rows. Memoizing by the inputs' identity is sound because DataFrames are immutable; the inputs are kept beside the
  result, so an id is never reused while the run lasts. Outside a run (a test calling one transform on its own
  frames) the function is plain.
- A run over inputs small enough for one task (`ONE_PARTITION_BYTES`) reads them, and materializes every
  intermediate, as one partition. Spark plans no shuffle over a single partition: an aggregation, a window or a
  join of such inputs runs in the stage that reads them, so a table is one job instead of one per shuffle. Joins
  then sort and merge in that stage too, instead of broadcasting (a broadcast is a job of its own), and
  expressions are interpreted instead of compiled (`ONE_PARTITION_CONF`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

ONE_PARTITION_BYTES = 256 << 20
"""Inputs (the dissector's Parquet) up to this size are analysed in one partition: about two million frames, a few
seconds of one core's work per table."""
ONE_PARTITION_CONF = {
    "spark.sql.shuffle.partitions": "1",  # what a checkpointed leaf's few shuffles use
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.optimizer.disableHints": "true",  # the transforms' broadcast hints are for many partitions
    # A join of single partitions is only kept unshuffled when Spark's size estimate of each side is under this; a
    # materialized leaf has no estimate (Long.MAX_VALUE)
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    # Expressions interpreted, not compiled: on a cold JVM, generating and compiling Java for each query's stages
    # (Janino, then the JIT on the generated classes) cost more CPU than a small input's rows take to interpret.
    # `factoryMode` is the switch Spark's own tests use for that interpreted path.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

Intermediate = Callable[..., DataFrame]
"""A function of DataFrames only (positional), returning one."""


@dataclass
class _Run:
    one_partition: bool
    kept: dict[tuple[str, tuple[int, ...]], tuple[tuple[DataFrame, ...], DataFrame]] = field(default_factory=dict)


_RUN: ContextVar[_Run | None] = ContextVar("run", default=None)


@contextmanager
def once_per_run(spark: SparkSession, one_partition: bool) -> Iterator[None]:
    """Intermediates computed inside are kept until the block ends; with `one_partition`, the session's settings for
    one partition hold inside (and are restored after). A nested block shares the outer one's."""
    if _RUN.get() is not None:
        yield
        return
    saved = {key: spark.conf.get(key, None) for key in ONE_PARTITION_CONF} if one_partition else {}
    for key in saved:
        spark.conf.set(key, ONE_PARTITION_CONF[key])
    token = _RUN.set(_Run(one_partition))
    try:
        yield
    finally:
        _RUN.reset(token)  # the checkpointed blocks go with their last reference (Spark's context cleaner)
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def partitioned(df: DataFrame, one_partition: bool) -> DataFrame:
    """`df` as one partition when asked: a coalesce, no shuffle, and Spark then knows no shuffle is needed."""
    return df.coalesce(1) if one_partition else df


def materialize(df: DataFrame) -> DataFrame:
    """`df`'s rows computed now and kept (localCheckpoint): later plans start from them instead of their lineage.
    Inside a one-partition run they stay one partition."""
    run = _RUN.get()
    return partitioned(df.localCheckpoint(eager=True), run is not None and run.one_partition)


def intermediate(fn: Intermediate) -> Intermediate:
    """Mark `fn(*frames) -> DataFrame` as shared by several jobs: computed once per run and materialized."""
    @functools.wraps(fn)
    def kept(*frames: DataFrame) -> DataFrame:
        run = _RUN.get()
        if run is None:
            return fn(*frames)
        key = (fn.__module__ + "." + fn.__qualname__, tuple(map(id, frames)))
        if key not in run.kept:
            run.kept[key] = (frames, materialize(fn(*frames)))
        return run.kept[key][1]
    return kept
