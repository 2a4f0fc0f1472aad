"""How a run keeps Spark's plans small: intermediates computed once, and small inputs in one partition.

Spark's cost on a capture's tables is planning and scheduling, not computing. Before this, every output table inlined
the members' frames, the ownership intervals and the epoch streams it needed, so one run of the bundled sample
planned and executed them dozens of times, in plans of up to 650 KB, and adaptive execution ran every shuffle of
them as a Spark job of its own (387 Spark jobs for 36 tables). Two rules remove that:

- Inside `once_per_run()`, a function marked `@intermediate` runs once per set of input DataFrames and its rows are
  kept (`materialize`) by the first query that computes them: every later caller, in the same job or a later one, gets
  a plan whose leaf is those rows. Memoizing by the inputs' identity is sound because DataFrames are immutable; the
  inputs are kept beside the result, so an id is never reused while the run lasts. Outside a run (a test calling one
  transform on its own frames) the function is plain.
- A run over inputs small enough for one task (`ONE_PARTITION_BYTES`) reads them, and materializes every
  intermediate, as one partition. Spark plans no shuffle over a single partition: an aggregation, a window or a
  join of such inputs runs in the stage that reads them, so a table is one job instead of one per shuffle. Joins
  then sort and merge in that stage too, instead of broadcasting (a broadcast is a job of its own)
  (`ONE_PARTITION_CONF`). On the smallest inputs, expressions are interpreted instead of compiled
  (`INTERPRETED_CONF`), and the inputs are read once and kept as rows (`KEPT_BYTES`).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafkatap.pipelines.planner_extension import ENABLED

ONE_PARTITION_BYTES = 256 << 20
"""Inputs (the dissector's Parquet) up to this size are analysed in one partition: about two million frames, a few
seconds of one core's work per table."""
INTERPRETED_BYTES = 2 << 20
"""Inputs up to this size (a few thousand frames, the bundled samples) have their expressions interpreted. Measured
one after the other in one session: the day_in_the_life sample (0.3 MB) took 29-37 s interpreted, 48-50 s compiled;
a 215k-frame chatty capture (12 MB) 103 s interpreted, 65 s compiled."""
KEPT_BYTES = 2 << 20
"""Inputs up to this size (the bundled samples) are read once and kept as rows, and so are the report tables a run
writes for its later steps (`keep`): on them, setting up a Parquet scan in every query that reads a table (Spark
broadcasts the Hadoop configuration for each, 6% of the JVM's samples on the sample) costs more than the rows take
to hold. A warm session, the four samples after a first one: 9.5-12.6 s each against 11.0-13.3 s."""
QUICK_JIT_BYTES = 32 << 20
"""Inputs up to this size are a short run for the JVM (`spark.QUICK_JIT`, its quick compiler only): the optimizing
compiler's work is about the same on any input (it compiles Spark's own planner and operators) and pays back only
over enough rows. `kafkatap analyze`, one run each way, quiet machine: the 215k-frame chatty capture (13 MB) 44 s
with the quick compiler only against 55 s with both (the JVM's CPU 72 against 112 s, 35 s of it the optimizing
compiler's thread); 1,043,908 generated frames (67 MB) 144 s against 131 s."""
EMPTIED_BYTES = 2 << 20
"""Inputs over this size ask whether an intermediate that large plans are built on has a row (`emptied`): one Spark job
each, worth it where the rows are many. The consumer duplicates' runs of the 228k-frame chatty capture, which has none,
`analyze_bench --runs 4` alternating: 23.7 s and 41.7 CPU s against 25.4 s and 44.4 (faster in 4 of 4); on the
bundled sample, which has runs, the job only cost (17.2 against 17.0 s, slower in 5 of 6). Asked too: the fencings
`fenced_epochs` flags and the leader-epoch refusals (the chatty capture's `fenced_epochs` plan 69 -> 2 KB)."""
BROADCAST_ROWS = 250_000
"""Materialized rows up to this many are broadcast to a join (`broadcast_small`): at the width of the consumer
duplicates' runs (about 110 bytes a row as Spark's rows), about 30 MB, which every executor holds once."""
ONE_PARTITION_CONF = {
    "spark.sql.shuffle.partitions": "1",  # what a checkpointed leaf's few shuffles use
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.optimizer.disableHints": "true",  # the transforms' broadcast hints are for many partitions
    # A join of single partitions is only kept unshuffled when Spark's size estimate of each side is under this; a
    # materialized leaf has no estimate (Long.MAX_VALUE)
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    # Without shuffles, adaptive execution has nothing to adapt, but still re-plans every query as query stages
    # (InsertAdaptiveSparkPlan alone was 0.9 s of a run of the bundled sample, Spark's RuleExecutor timings).
    # Constraint propagation infers filters that pay off on large scans; over one partition it only costs
    # optimizer time (PruneFilters 0.4 s for 2 rewrites). Together, on the sample: Spark jobs 120 -> 55, CPU 48.1 ->
    # 45.6 s.
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.constraintPropagation.enabled": "false",
    # Spark still shuffles into one partition for each join or window above a few joins (its size estimate of a
    # join outgrows maxSinglePartitionBytes); the planner extension, where the session loaded it, coalesces instead
    ENABLED: "true",
}
INTERPRETED_CONF = {
    # Generating and compiling Java for each query's stages (Janino, then the JIT on the generated classes) costs
    # more CPU on a cold JVM than a tiny input's rows take to interpret. `factoryMode` is the switch Spark's own
    # tests use for that interpreted path.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def one_partition(input_bytes: int) -> bool:
    """Whether a run over `input_bytes` of input is analysed in one partition."""
    return input_bytes <= ONE_PARTITION_BYTES


def interpreted(input_bytes: int) -> bool:
    """Whether a run over `input_bytes` of input interprets its expressions (and is short)."""
    return input_bytes <= INTERPRETED_BYTES


def asks_empty(input_bytes: int) -> bool:
    """Whether a run over `input_bytes` of input asks whether its large intermediates have rows (`EMPTIED_BYTES`)."""
    return input_bytes > EMPTIED_BYTES


def kept_in_memory(input_bytes: int) -> bool:
    """Whether a run over `input_bytes` of input keeps its inputs and written tables as rows (`KEPT_BYTES`)."""
    return input_bytes <= KEPT_BYTES


def quick_jit(input_bytes: int) -> bool:
    """Whether a run over `input_bytes` of input is short enough for the JVM's quick compiler only."""
    return input_bytes <= QUICK_JIT_BYTES


def run_conf(input_bytes: int) -> dict[str, str]:
    """The session settings for a run over `input_bytes` of input."""
    return ({**(ONE_PARTITION_CONF if one_partition(input_bytes) else {}),
             **(INTERPRETED_CONF if interpreted(input_bytes) else {})})


Intermediate = Callable[..., DataFrame]
"""A function of DataFrames only (positional), returning one."""


@dataclass
class _Kept:
    """One intermediate of a run: its lock makes a second job that needs it wait for the first one's plan."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    frames: tuple[DataFrame, ...] = ()  # the inputs, kept so their ids are not reused while the run lasts
    result: DataFrame | None = None


@dataclass
class _Run:
    one_partition: bool
    asks_empty: bool
    kept: dict[tuple[str, tuple[int, ...]], _Kept] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # guards `kept` (jobs run in threads)
    asked: dict[tuple[str, int], tuple[DataFrame, object]] = field(default_factory=dict)  # `_asked`, by input
    asked_lock: threading.Lock = field(default_factory=threading.Lock)


_RUN: ContextVar[_Run | None] = ContextVar("run", default=None)
T = TypeVar("T")


@contextmanager
def once_per_run(spark: SparkSession, input_bytes: int) -> Iterator[None]:
    """Intermediates computed inside are kept until the block ends; the session's settings for a run over
    `input_bytes` of input (`run_conf`) hold inside and are restored after. A nested block shares the outer one's,
    and so does a thread started with a copy of the block's context (`contextvars.copy_context`)."""
    if _RUN.get() is not None:
        yield
        return
    with session_settings(spark, run_conf(input_bytes)):
        token = _RUN.set(_Run(one_partition(input_bytes), asks_empty(input_bytes)))
        try:
            yield
        finally:
            _RUN.reset(token)  # the checkpointed blocks go with their last reference (Spark's context cleaner)


@contextmanager
def session_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """The session's `settings` inside the block, its own (set or unset) after: one session serves many runs."""
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def partitioned(df: DataFrame, one: bool) -> DataFrame:
    """`df` as one partition when `one`: a coalesce, no shuffle, and Spark then knows no shuffle is needed."""
    return df.coalesce(1) if one else df


def clustered(df: DataFrame, *cols: str) -> DataFrame:
    """`df` exchanged by `cols` once, so that the aggregations and joins after it keyed by any superset of them need
    no exchange of their own; inside a one-partition run, `df` itself: one partition needs no exchange at all."""
    run = _RUN.get()
    return df if run is not None and run.one_partition else df.repartition(*cols)


def keep(df: DataFrame, one: bool) -> DataFrame:
    """`df`'s rows kept where the first query that reads them computes them (a lazy localCheckpoint): later plans
    start from those rows instead of `df`'s lineage, and no Spark job runs only to compute them. One partition
    when `one`. When Spark's optimizer knows `df` to be empty (`transforms.common.of_apis`), a limit of 0 on top
    tells the plans that read it so too, which kept rows alone would hide: they are then planned as empty, and the
    rows are never computed."""
    kept = partitioned(df.localCheckpoint(eager=False), one)
    return kept.limit(0) if known_empty(df) else kept


def known_empty(df: DataFrame) -> bool:
    """Whether Spark's optimizer reduced `df` to an empty relation. The optimized plan is the one its checkpoint or
    query then plans from (the same `QueryExecution`), so asking costs a few calls, not an optimization."""
    plan = df._jdf.queryExecution().optimizedPlan()
    return plan.nodeName() == "LocalRelation" and plan.data().isEmpty()


_INPUTS: weakref.WeakSet[DataFrame] = weakref.WeakSet()


def an_input(df: DataFrame) -> DataFrame:
    """Mark `df` as one of a run's inputs (`report.read_inputs`): the questions below are asked of inputs only, once
    each per run, never of the many DataFrames built from them."""
    _INPUTS.add(df)
    return df


def api_keys_in(frames: DataFrame) -> frozenset[int] | None:
    """The api keys an input's `frames` hold, asked once per run (one small query); None outside a run or for
    DataFrames that are no input: not known."""
    return _asked(frames, "api_keys", lambda: frozenset(r[0] for r in frames.select("api_key").distinct().collect()))


def has_rows(df: DataFrame) -> bool | None:
    """Whether an input `df` has a row, asked once per run (one small query); None outside a run or for DataFrames
    that are no input: not known."""
    return _asked(df, "has_rows", lambda: not df.isEmpty())


def _asked(df: DataFrame, question: str, ask: Callable[[], T]) -> T | None:
    run = _RUN.get()
    if run is None or df not in _INPUTS:
        return None
    with run.asked_lock:  # two jobs asking at once ask once
        key = (question, id(df))
        if key not in run.asked:
            run.asked[key] = (df, ask())  # `df` kept: its id is not reused while the run lasts
        return run.asked[key][1]


def materialize(df: DataFrame) -> DataFrame:
    """`df` kept (`keep`), as one partition inside a one-partition run."""
    run = _RUN.get()
    return keep(df, run is not None and run.one_partition)


def emptied(df: DataFrame) -> DataFrame:
    """`df` kept (`materialize`), and, when it has no row, known empty to the plans that read it, so that Spark's
    optimizer removes the joins and windows built on it instead of running them over their other inputs. Asking is
    one Spark job, that computes the kept rows its readers would compute anyway; so only on inputs large enough to pay
    for it (`EMPTIED_BYTES`), and never outside a run."""
    kept = materialize(df)
    run = _RUN.get()
    if run is None or not run.asks_empty:
        return kept
    return kept.limit(0) if kept.isEmpty() else kept


def broadcast_small(df: DataFrame) -> DataFrame:
    """`df` materialized and, when it has at most BROADCAST_ROWS rows, marked for broadcast to the join that reads it,
    so the other side, however large, is neither exchanged nor sorted for that join. Spark cannot size a
    materialized leaf itself (its estimate is Long.MAX_VALUE), so the rows are counted. Inside a one-partition run,
    `df` itself: hints are off there, and the count would be a Spark job of its own."""
    run = _RUN.get()
    if run is not None and run.one_partition:
        return df
    kept = materialize(df)
    return F.broadcast(kept) if kept.count() <= BROADCAST_ROWS else kept


def intermediate(fn: Intermediate) -> Intermediate:
    """Mark `fn(*frames) -> DataFrame` as shared by several jobs: computed once per run and materialized."""
    @functools.wraps(fn)
    def kept(*frames: DataFrame) -> DataFrame:
        run = _RUN.get()
        if run is None:
            return fn(*frames)
        key = (fn.__module__ + "." + fn.__qualname__, tuple(map(id, frames)))
        with run.lock:
            slot = run.kept.setdefault(key, _Kept())
        with slot.lock:  # no deadlock: an intermediate only ever waits for the ones it calls, never for its callers
            if slot.result is None:
                slot.frames, slot.result = frames, materialize(fn(*frames))
            return slot.result
    return kept
