"""Why a party was fenced, where the wire shows it, in columns and in one sentence a user can act on.

A broker's error only says that a request was refused. What led to it is in the fenced party's own traffic before
it: a group member that went silent for longer than its session timeout (the coordinator removed it), one that had
left, a static member whose instance id another member took over, a member that missed the rebalance to the group's
current generation; a producer whose transactional id a second instance initialised. For classic groups the
generation the member is compared with is the group's (the latest one the coordinator handed to any member), not
the member's own join. For KIP-848 consumer groups and KIP-1071 streams groups (`MEMBER_EPOCH_KINDS`: the same
member epoch rules) the member's own epoch stays the comparison, and the group's epoch beside it is the highest
member epoch the coordinator handed to any member of the group by then: heartbeat responses carry no group epoch, and
a member's epoch reaches the group's once it has reconciled, so that is what the wire proves.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.transforms.common import (
    ISO, MEMBER_EPOCH_KINDS, MEMBER_HEARTBEATS, MEMBER_KINDS, is_ok, response_source
)
from kafkatap.pipelines.transforms.fencers import FENCER_EPOCH, ROW_KEY
from kafkatap.pipelines.transforms.members import (
    MISSED_HEARTBEATS, heartbeat_interval_ms, is_leave, member_frames, removed_for_silence, session_timeout_ms
)

CAUSE = ["cause", "last_ok_ts", "silent_s", "session_timeout_ms", "heartbeat_interval_ms", "group_generation",
         "group_epoch", "explanation"]


def _member_facts(rows: DataFrame, frames: DataFrame) -> DataFrame:
    """Per member fencing row: its last accepted request before the fencing, its session timeout as of then (the
    latest JoinGroup's), whether it had left, and whether another member took over its static instance id."""
    mf = member_frames(frames)
    # An as-of pass, not a join of each fencing with all of its member's earlier frames (which grows with the square
    # of a member's traffic): the member's frames and its fencings in one time order, a fencing after the frames
    # before it and before those at its own instant, each fact the latest so far.
    member = ["group_id", "member_id"]
    fenced = rows.where(F.col("kind").isin(MEMBER_KINDS) & F.col("group_id").isNotNull()
                        & F.col("member_id").isNotNull()).select(*ROW_KEY, *member, F.lit(0).alias("side"))
    own = mf.where(F.col("group_id").isNotNull() & F.col("member_id").isNotNull()).select(
        *member, "ts", F.lit(1).alias("side"), F.lit(True).alias("own"),
        (is_ok(F.col("error_code")) & ~is_leave()).alias("ok"),
        is_leave().alias("leave"), session_timeout_ms().alias("timeout"), heartbeat_interval_ms().alias("beat"))
    before = Window.partitionBy(*member).orderBy("ts", "side").rowsBetween(Window.unboundedPreceding, -1)
    facts = (fenced.unionByName(own, allowMissingColumns=True)
             .select("*", F.count("own").over(before).alias("frames_before"),
                     F.max(F.when(F.col("ok"), F.col("ts"))).over(before).alias("last_ok_ts"),
                     F.last("timeout", ignorenulls=True).over(before).alias("session_timeout_ms"),
                     F.last("beat", ignorenulls=True).over(before).alias("heartbeat_interval_ms"),
                     F.max(F.when(F.col("leave"), F.col("ts"))).over(before).alias("left_ts"))
             .where((F.col("side") == 0) & (F.col("frames_before") > 0))
             .groupBy(*ROW_KEY).agg(*[F.max(c).alias(c) for c in ("last_ok_ts", "session_timeout_ms",
                                                                  "heartbeat_interval_ms", "left_ts")]))
    # the fenced member's static instance: the row's, else the one its own frames named (KIP-848 and streams
    # heartbeats name it `instance_id`, which `member_frames` reads and the rows' group_instance_id does not hold)
    named = (mf.where(F.col("group_instance_id").isNotNull()).groupBy("group_id", "member_id")
             .agg(F.max("group_instance_id").alias("named")))
    static = (rows.where(F.col("kind").isin(MEMBER_KINDS)).join(named, ["group_id", "member_id"], "left")
              .withColumn("instance", F.coalesce("group_instance_id", "named")).where(F.col("instance").isNotNull()))
    # the latest other member id answered for the same static instance before the fencing (`with_causes` keeps it
    # when it came after this member's last accepted request): a JoinGroup's or a member heartbeat's
    others = mf.where(F.col("group_instance_id").isNotNull() & is_ok(F.col("error_code"))
                      & F.col("api_key").isin(ApiKey.JOIN_GROUP, *MEMBER_HEARTBEATS)).alias("o")
    took = (static.alias("r")
            .join(others, (F.col("o.group_id") == F.col("r.group_id"))
                  & (F.col("o.group_instance_id") == F.col("r.instance"))
                  & (F.col("o.member_id") != F.col("r.member_id")) & (F.col("o.ts") < F.col("r.ts")))
            .groupBy(*[F.col(f"r.{c}") for c in ROW_KEY])
            .agg(F.max_by(F.struct(F.col("o.member_id").alias("member_id"), F.col("o.ts").alias("ts"),
                                   F.col("r.instance").alias("instance")), F.col("o.ts")).alias("replaced_by")))
    return _on_rows(facts, took, "full")


def _group_epochs(rows: DataFrame, handed: DataFrame) -> DataFrame:
    """Per group member fencing row: the latest epoch the coordinator handed to any member of its group at or before
    it (a classic group's generation, a KIP-848 or streams group's epoch as far as the wire shows it), and where."""
    # An as-of pass per group (a join of each fencing with every earlier epoch of its group grows with the square of
    # the group's traffic): handed epochs and fencings in one time order, an epoch handed at a fencing's own instant
    # before it, each fencing taking the highest (epoch, time) so far.
    group = ["kind", "group_id"]
    fenced = rows.where(F.col("kind").isin(MEMBER_KINDS) & F.col("group_id").isNotNull()).select(
        *ROW_KEY, "group_id", F.lit(1).alias("side"))
    # response_source names the correlation id and connection unqualified: the handed row's own
    epochs = handed.where(F.col("kind").isin(MEMBER_KINDS) & F.col("group_id").isNotNull()).select(
        *group, "ts", F.lit(0).alias("side"), F.struct(F.col("epoch").alias("epoch"), F.col("ts").alias("ts"),
                                                        response_source(F.col("api_name"), F.col("ts")).alias("source")
                                                        ).alias("handed"))
    so_far = Window.partitionBy(*group).orderBy("ts", "side").rowsBetween(Window.unboundedPreceding, 0)
    latest = (fenced.unionByName(epochs, allowMissingColumns=True)
              .select("*", F.max("handed").over(so_far).alias("latest"))
              .where((F.col("side") == 1) & F.col("latest").isNotNull())
              .groupBy(*ROW_KEY).agg(F.max("latest").alias("latest")))
    return latest.select(*ROW_KEY, F.struct(F.col("latest.epoch").alias("epoch"),
                                            F.col("latest.source").alias("source")).alias("generation"))


def _on_rows(left: DataFrame, right: DataFrame, how: str) -> DataFrame:
    """Join per fencing row: null-safe on `ROW_KEY` (a leave or a join carries no epoch: `stale_epoch` is null)."""
    keys = [F.col(f"a.{c}").eqNullSafe(F.col(f"b.{c}")) for c in ROW_KEY]
    joined = left.alias("a").join(right.alias("b"), keys, how)
    rest = [F.col(f"b.{c}") for c in right.columns if c not in ROW_KEY]
    if how == "full":
        return joined.select(*[F.coalesce(f"a.{c}", f"b.{c}").alias(c) for c in ROW_KEY],
                             *[F.col(f"a.{c}") for c in left.columns if c not in ROW_KEY], *rest)
    return joined.select("a.*", *rest)


def _at(ts: Column) -> Column:
    return F.date_format(ts, ISO)


def _explanation(silent: Column) -> Column:
    """One sentence per cause, naming the party, what it did and what the coordinator did about it."""
    who = F.concat(F.coalesce(F.col("client_id"), F.lit("?")), F.lit(" (member "), F.coalesce("member_id", F.lit("?")),
                   F.lit(")"))
    refused = F.concat(F.lit("its "), F.col("api_name"), F.lit(" at "), _at(F.col("ts")), F.lit(" was refused "),
                       F.coalesce(F.col("error_name"), F.lit("without a response")))
    limit = F.when(F.col("session_timeout_ms").isNotNull(), F.concat(
        F.lit("longer than its session timeout ("), F.format_number(F.col("session_timeout_ms") / 1000, 1),
        F.lit(" s, from its JoinGroup)"))).otherwise(F.concat(
            F.lit("more than "), F.lit(str(MISSED_HEARTBEATS)), F.lit(" of its heartbeat intervals ("),
            F.format_number(F.col("heartbeat_interval_ms") / 1000, 1),
            F.lit(" s; the session timeout itself is a broker setting)")))
    return (
        F.when(F.col("cause") == "session_timeout", F.concat(
            who, F.lit(" sent nothing the coordinator accepted for "), F.format_number(silent, 1),
            F.lit(" s after "), _at(F.col("last_ok_ts")), F.lit(", "), limit, F.lit(": the coordinator removed it"),
            F.when(F.col("group_generation").isNotNull(), F.concat(
                F.lit(" and the group went on to generation "), F.col("group_generation").cast("string")))
            .when(F.col("group_epoch").isNotNull(), F.concat(
                F.lit(" and the group went on to epoch "), F.col("group_epoch").cast("string")))
            .otherwise(F.lit("")), F.lit("; "), refused, F.lit(".")))
        .when(F.col("cause") == "left", F.concat(who, F.lit(" had left the group; "), refused, F.lit(".")))
        .when(F.col("cause") == "replaced", F.concat(
            who, F.lit(" was replaced: "), F.coalesce(F.concat(
                F.lit("member "), F.col("replaced_by.member_id"), F.lit(" joined as its static instance "),
                F.col("replaced_by.instance"), F.lit(" at "), _at(F.col("replaced_by.ts"))),
                F.lit("another member joined as its static instance")), F.lit("; "), refused, F.lit(".")))
        .when(F.col("cause") == "new_generation", F.concat(
            who, F.lit(" used generation "), F.col("stale_epoch").cast("string"),
            F.lit(" while the group was in generation "), F.col("group_generation").cast("string"),
            F.lit(": it missed a rebalance; "), refused, F.lit(".")))
        .when(F.col("cause") == "stale_epoch", F.concat(
            who, F.lit(" used epoch "), F.col("stale_epoch").cast("string"),
            F.lit(" after the coordinator had handed it "), F.col("current_epoch").cast("string"),
            F.when(F.col("group_epoch").isNotNull(), F.concat(
                F.lit(" (the group at epoch "), F.col("group_epoch").cast("string"), F.lit(")"))).otherwise(F.lit("")),
            F.lit("; "), refused, F.lit(".")))
        .when(F.col("cause") == "new_instance", F.concat(
            F.lit("Producer "), F.coalesce(F.col("transactional_id"), F.col("producer_id").cast("string")),
            F.lit(" ("), F.coalesce(F.col("client_id"), F.lit("?")), F.lit(") used epoch "),
            F.col("stale_epoch").cast("string"), F.lit(" after "), F.coalesce(F.col("fenced_by_client_id"), F.lit("?")),
            F.lit(" initialised the same producer at "), _at(F.col("fenced_by_ts")), F.lit(" with epoch "),
            F.coalesce(F.col(FENCER_EPOCH), F.col("current_epoch")).cast("string"),
            # transactions v2: every EndTxn hands the next epoch, so the new instance's own commits took it further
            F.when(F.col(FENCER_EPOCH) < F.col("current_epoch"), F.concat(
                F.lit(" and its transactions since brought it to epoch "), F.col("current_epoch").cast("string")))
            .otherwise(F.lit("")), F.lit("; "), refused, F.lit(".")))
        .when(F.col("inferred"), F.concat(
            F.coalesce(F.col("client_id"), F.lit("?")), F.lit(" used epoch "), F.col("stale_epoch").cast("string"),
            F.lit(" after "), F.col("current_epoch").cast("string"),
            F.lit(" had been handed to the same party, and the broker did not refuse it: a zombie.")))
        .otherwise(F.concat(
            F.coalesce(F.col("client_id"), F.lit("?")), F.lit("'s "), F.col("api_name"), F.lit(" at "),
            _at(F.col("ts")), F.lit(" was refused "), F.coalesce(F.col("error_name"), F.lit("?")),
            F.lit(" with epoch "), F.coalesce(F.col("stale_epoch").cast("string"), F.lit("none")),
            F.when(F.col("current_epoch").isNotNull(), F.concat(
                F.lit(", the latest one the capture shows handed to it being "), F.col("current_epoch").cast("string")))
            .otherwise(F.lit(", and the capture shows no epoch handed to it")),
            F.lit(": the capture does not show why (the broker changed it without a response in the capture, or the "
                  "error was not about its epoch)."))))


def with_causes(rows: DataFrame, frames: DataFrame, handed: DataFrame) -> DataFrame:
    """Add CAUSE to fencing rows (`fenced_epochs` before its final select); classic members' `current_epoch` becomes
    the group's generation where that is newer than the member's own; KIP-848 and streams group rows keep the
    member's own epoch and gain the group's."""
    facts = _member_facts(rows, frames)
    classic = F.col("kind") == "classic_group"
    generation = F.when(classic, F.col("generation.epoch"))
    out = (_on_rows(_on_rows(rows, facts, "left"), _group_epochs(rows, handed), "left")
           .withColumns({
               "group_generation": generation,
               "group_epoch": F.when(F.col("kind").isin(MEMBER_EPOCH_KINDS), F.col("generation.epoch")),
               "current_epoch_source": F.when(generation > F.coalesce(F.col("current_epoch"), F.lit(-1)),
                                              F.col("generation.source")).otherwise(F.col("current_epoch_source")),
               "current_epoch": F.greatest(F.col("current_epoch"), generation),
           }))
    member = F.col("kind").isin(MEMBER_KINDS)
    silent = (F.unix_micros(F.col("ts")) - F.unix_micros(F.col("last_ok_ts"))) / 1e6
    expired = removed_for_silence(F.col("kind"), F.col("error_name"), silent * 1000, F.col("session_timeout_ms"),
                                  F.col("heartbeat_interval_ms"))
    cause = (F.when(F.col("inferred"), F.lit(None))
             .when(member & ((F.col("error_name") == "FENCED_INSTANCE_ID") | F.coalesce(
                 F.col("replaced_by.ts") > F.col("last_ok_ts"), F.col("replaced_by").isNotNull())), "replaced")
             .when(member & F.col("left_ts").isNotNull() & (F.col("left_ts") >= F.coalesce("last_ok_ts", "left_ts")),
                   "left")
             .when(member & expired, "session_timeout")
             .when(classic & (F.col("stale_epoch") < F.col("group_generation")), "new_generation")
             .when(member & (F.col("stale_epoch") < F.col("current_epoch")), "stale_epoch")
             .when((F.col("kind") == "producer") & F.col("fenced_by_ts").isNotNull(), "new_instance"))
    return (out.withColumns({"silent_s": F.when(member, silent), "cause": cause})
            .withColumn("explanation", _explanation(F.col("silent_s")))
            .drop("generation", "left_ts", "replaced_by", FENCER_EPOCH))
