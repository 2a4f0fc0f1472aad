"""rebalances: one row per rebalance episode of a consumer or streams group, with who came and went, what moved,
how long the moved partitions had no owner, and what triggered it.

Episodes come from `episodes` (their boundaries per group kind), ownership from `ownership`. The trigger is the
earliest cause seen between the previous episode's close and this one's: a member that joined (its JoinGroup, or
KIP-848 or streams group heartbeat at epoch 0), one that left (LeaveGroup or epoch -1/-2), one answered a fencing
error, one that is gone with none of these (expired: the broker timed its session out), or a member whose
subscription changed; ties go in that order, and nothing seen is `unknown`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.storage import client_host
from kafkatap.pipelines.transforms.common import MEMBER_FENCING, MEMBER_HEARTBEATS, request_str, with_client_host
from kafkatap.pipelines.transforms.episodes import episodes
from kafkatap.pipelines.transforms.members import is_leave, member_frames, member_keys
from kafkatap.pipelines.transforms.ownership import ownership

OUTPUT = ["group_id", "kind", "start_ts", "end_ts", "duration_s", "generation_or_epoch", "rounds", "members_before",
          "members_after", "members_joined", "members_left", "partitions_moved", "moved_partitions", "stalled_s",
          "fetch_gap_s", "fetch_gap_partition_s", "trigger", "trigger_member_id", "evidence"]
CAUSES = ["member_joined", "member_left", "member_fenced", "member_expired", "subscription_changed"]


def _seconds(start: Column, end: Column) -> Column:
    return (F.unix_micros(end) - F.unix_micros(start)) / 1e6


def _causes(frames: DataFrame) -> DataFrame:
    """(group_id, member_id, ts, cause) for every join, leave, fencing and subscription change."""
    mf = member_frames(frames)
    is_join = (F.col("api_key") == ApiKey.JOIN_GROUP) | (
        F.col("api_key").isin(MEMBER_HEARTBEATS) & (F.col("member_epoch") == 0))
    fenced = F.col("error_name").isin(MEMBER_FENCING)
    topics = F.array_sort(F.coalesce(
        F.from_json(request_str("$.protocols[0].metadata['$consumer'].topics"), "array<string>"),
        F.from_json(request_str("$.subscribed_topic_names"), "array<string>")))
    order = Window.partitionBy("group_id", "member_id").orderBy("ts")
    subscribed = (mf.withColumn("topics", topics).where(F.col("topics").isNotNull())
                  .withColumn("_prev", F.lag("topics").over(order))
                  .where(F.col("_prev").isNotNull() & (F.col("_prev") != F.col("topics"))))
    cause = (F.when(fenced, "member_fenced").when(is_leave(), "member_left").when(is_join, "member_joined"))
    at = F.when(fenced, F.coalesce("ts_response", "ts_request")).otherwise(F.col("ts"))
    return (mf.where(fenced | is_leave() | is_join)
            .select("group_id", "member_id", at.alias("ts"), cause.alias("cause"))
            .unionByName(subscribed.select("group_id", "member_id", "ts",
                                           F.lit("subscription_changed").alias("cause"))))


def _triggers(eps: DataFrame, causes: DataFrame) -> DataFrame:
    """trigger / trigger_member_id per episode (keyed by group_id, end_ts)."""
    c = causes.alias("c")
    e = eps.select("group_id", "end_ts", "prev_end", "start_ts", "members_joined", "members_left", "after",
                   "before").alias("e")
    member = F.col("c.member_id")
    relevant = (F.when(F.col("c.cause") == "member_joined", F.array_contains("e.members_joined", member))
                .when(F.col("c.cause") == "subscription_changed",
                      F.array_contains("e.before", member) & F.array_contains("e.after", member))
                .otherwise(F.array_contains("e.members_left", member)))
    seen = (e.join(c, (F.col("c.group_id") == F.col("e.group_id")) & (F.col("c.ts") <= F.col("e.end_ts"))
                   & (F.col("e.prev_end").isNull() | (F.col("c.ts") > F.col("e.prev_end"))))
            .where(relevant)
            .select("e.group_id", "e.end_ts", "c.member_id", "c.cause", "c.ts"))
    explained = seen.where(F.col("cause").isin("member_left", "member_fenced")).select(
        "group_id", "end_ts", "member_id").distinct()
    expired = (eps.select("group_id", "end_ts", "start_ts", F.explode("members_left").alias("member_id"))
               .join(explained, ["group_id", "end_ts", "member_id"], "left_anti")
               .select("group_id", "end_ts", "member_id", F.lit("member_expired").alias("cause"),
                       F.col("start_ts").alias("ts")))
    rank = F.array_position(F.array(*[F.lit(c) for c in CAUSES]), F.col("cause"))
    return (seen.unionByName(expired).withColumn("_key", F.struct("ts", rank.alias("rank"), "member_id"))
            .groupBy("group_id", "end_ts")
            .agg(F.min_by(F.struct("cause", "member_id"), "_key").alias("t")))


def _fetch_gaps(both: DataFrame, batches: DataFrame) -> DataFrame:
    """Per moved partition (`both`: key, old, new): when its records were last fetched by the old owner's client
    before the new owner got it, and first fetched by the new owner's client after (a client is its client id on its
    host, as fetches are linked to members: Fetch requests name no member)."""
    fetched = (with_client_host(batches.where(F.col("direction") == "fetch"))
               .select("topic", "partition", "client_id", "client_host", "ts").alias("f"))
    key = [F.col(f"m.{c}") for c in ["group_id", "end_ts", "topic", "partition"]]
    m = both.alias("m")
    tp = (F.col("f.topic") == F.col("m.topic")) & (F.col("f.partition") == F.col("m.partition"))
    handover = F.coalesce(F.col("m.new.taken"), F.col("m.end_ts"))
    last_old = (m.join(fetched, tp & (F.col("f.client_id") == F.col("m.old.client_id"))
                       & (F.col("f.client_host") == F.col("m.old.client_host")) & (F.col("f.ts") <= handover))
                .groupBy(*key).agg(F.max("f.ts").alias("old_last_fetch")))
    first_new = (m.join(fetched, tp & (F.col("f.client_id") == F.col("m.new.client_id"))
                        & (F.col("f.client_host") == F.col("m.new.client_host"))
                        & (F.col("f.ts") >= F.col("m.new.taken")))
                 .groupBy(*key).agg(F.min("f.ts").alias("new_first_fetch")))
    return last_old.join(first_new, ["group_id", "end_ts", "topic", "partition"], "full")


def _owner(name: str, column: str) -> Column:
    """An ownership row as the struct `_moves` compares: the member (`member_keys`), its member id, client and host,
    and `column` as `name`."""
    return F.struct(F.col("o.member").alias("member"), F.col("o.member_id").alias("member_id"),
                    F.col("o.client_id").alias("client_id"),
                    client_host(F.substring_index(F.col("o.conn_id"), ">", 1)).alias("client_host"),
                    F.col(column).alias(name))


def _moves(eps: DataFrame, owned: DataFrame, batches: DataFrame) -> DataFrame:
    """partitions_moved / moved_partitions / stalled_s / fetch_gap_s / fetch_gap_partition_s per episode: owners at
    the previous close against owners at this close, as members (a static instance and its replacement are one); a
    moved partition is unowned from its old owner's last release (or the episode's start, when it had none) to its
    new owner's assignment (or the episode's end, when it has none), and unfetched from its old owner's last fetch of
    its records to its new owner's first."""
    e = eps.select("group_id", "end_ts", "prev_end", "start_ts").alias("e")
    o = owned.alias("o")
    # a static instance's replacement holds on to what the instance held: its member's release is the last one
    released = (e.join(o, (F.col("o.group_id") == F.col("e.group_id")) & F.col("e.prev_end").isNotNull()
                       & (F.col("o.own_end") >= F.col("e.prev_end")) & (F.col("o.own_start") <= F.col("e.end_ts")))
                .groupBy("e.group_id", "e.end_ts", "o.topic", "o.partition", "o.member")
                .agg(F.max("o.own_end").alias("_released")))
    same = (F.col("o.group_id") == F.col("e.group_id"))
    old = (e.join(o, same & F.col("e.prev_end").isNotNull() & (F.col("o.own_start") <= F.col("e.prev_end"))
                  & (F.col("o.own_end") >= F.col("e.prev_end")))
           .select("e.group_id", "e.end_ts", "o.topic", "o.partition", _owner("released", "o.own_end").alias("old"),
                   "o.own_start"))
    new = (e.join(o, same & (F.col("o.own_start") <= F.col("e.end_ts")) & (F.col("o.own_end") >= F.col("e.end_ts")))
           .select("e.group_id", "e.end_ts", "o.topic", "o.partition", _owner("taken", "o.own_start").alias("new")))
    key = ["group_id", "end_ts", "topic", "partition"]
    # a zombie still holding a partition is not its owner: the member handed it last is
    old = (old.groupBy(key).agg(F.max_by("old", "own_start").alias("old")).withColumn("member", F.col("old.member"))
           .join(released, [*key, "member"], "left")
           .withColumn("old", F.col("old").withField("released", F.greatest("old.released", "_released")))
           .select(*key, "old"))
    new = new.groupBy(key).agg(F.max_by("new", "new.taken").alias("new"))
    both = (old.join(new, key, "full").join(eps.select("group_id", "end_ts", "start_ts"), ["group_id", "end_ts"])
            .where(~F.col("old.member").eqNullSafe(F.col("new.member"))))
    unowned = _seconds(F.coalesce(F.col("old.released"), F.col("start_ts")),
                       F.coalesce(F.col("new.taken"), F.col("end_ts")))
    gaps = _fetch_gaps(both, batches)
    # null when either fetch is not in the capture (greatest would make it 0)
    unfetched = F.when(F.col("old_last_fetch").isNotNull() & F.col("new_first_fetch").isNotNull(), F.greatest(
        _seconds(F.col("old_last_fetch"), F.col("new_first_fetch")), F.lit(0.0)))
    return (both.join(gaps, key, "left").groupBy("group_id", "end_ts").agg(
        F.count(F.lit(1)).alias("partitions_moved"),
        F.array_sort(F.collect_list(F.concat_ws(":", "topic", F.col("partition").cast("string"))))
        .alias("moved_partitions"),
        F.max(F.greatest(unowned, F.lit(0.0))).alias("stalled_s"),
        F.max(unfetched).alias("fetch_gap_s"), F.sum(unfetched).alias("fetch_gap_partition_s")))


def _arrived(ids: str, others: str) -> Column:
    """The member ids `ids` (an episode's `before` or `after`) whose member (`<ids>_members`) is none of `others`':
    a static instance back under a new member id has not arrived."""
    return F.filter(ids, lambda m: ~F.array_contains(F.map_values(f"{others}_members"),
                                                     F.element_at(F.col(f"{ids}_members"), m)))


def rebalances(frames: DataFrame, batches: DataFrame) -> DataFrame:
    eps = episodes(frames).withColumns({"members_joined": _arrived("after", "before"),
                                        "members_left": _arrived("before", "after")})
    key = ["group_id", "end_ts"]
    moved = F.coalesce("partitions_moved", F.lit(0))
    return (eps.join(_triggers(eps, _causes(frames)), key, "left")
            .join(_moves(eps, ownership(frames, batches).join(member_keys(frames), ["group_id", "member_id"], "left")
                         .withColumn("member", F.coalesce("member", "member_id")), batches), key, "left")
            .withColumns({
                "duration_s": _seconds(F.col("start_ts"), F.col("end_ts")),
                "members_before": F.size("before").cast("int"),
                "members_after": F.size("after").cast("int"),
                "partitions_moved": moved,
                "moved_partitions": F.coalesce("moved_partitions", F.array().cast("array<string>")),
                "stalled_s": F.coalesce("stalled_s", F.lit(0.0)),
                "fetch_gap_s": F.when(moved == 0, 0.0).otherwise(F.col("fetch_gap_s")),
                "fetch_gap_partition_s": F.when(moved == 0, 0.0).otherwise(F.col("fetch_gap_partition_s")),
                "trigger": F.coalesce(F.col("t.cause"), F.lit("unknown")),
                "trigger_member_id": F.col("t.member_id"),
                "evidence": F.concat(F.lit("opened by "), F.col("open_evidence"), F.lit("; closed by "),
                                     F.col("close_evidence")),
            })
            .select(OUTPUT))
