"""Epochs handed out by brokers and epochs used by clients, as one event stream per fenceable party.

A party is a group member (`group/member`), a producer (`pid:<id>`) or a share session (`share:group/member`).
Handed events come from successful responses (JoinGroup generation, heartbeat member epoch, InitProducerId / EndTxn
producer epoch, the next share session epoch); usage events are requests carrying an epoch. Ordering both by time
gives every request the latest epoch handed to its party before it: the evidence for fencings.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.pipelines.intermediates import intermediate
from kafkatap.pipelines.transforms.common import (
    MEMBER_HEARTBEATS, TXN_APIS, group_kinds, is_ok, nonempty, of_apis, request_str, response_source, response_str
)

EVENT_COLUMNS = ["kind", "party", "group_id", "member_id", "group_instance_id", "transactional_id", "producer_id",
                 "epoch", "handed", "ts", "conn_id", "correlation_id", "api_key", "api_name", "client_id",
                 "error_code", "error_name"]


def _event(df: DataFrame, kind: Column, party: Column, epoch: Column, handed: bool, ts: Column,
           member_id: Column | None = None, producer_id: Column | None = None) -> DataFrame:
    return df.select(
        kind.alias("kind"), party.alias("party"), F.col("group_id"),
        (member_id if member_id is not None else F.col("member_id")).alias("member_id"),
        F.col("group_instance_id"), F.col("transactional_id"),
        (producer_id if producer_id is not None else F.col("producer_id")).cast("long").alias("producer_id"),
        epoch.cast("int").alias("epoch"), F.lit(handed).alias("handed"), ts.alias("ts"),
        "conn_id", "correlation_id", "api_key", "api_name", "client_id", "error_code", "error_name",
    )


def _member_party(member: Column) -> Column:
    return F.concat_ws("/", F.col("group_id"), member)


def _heartbeat_kind() -> Column:
    """The group kind a member heartbeat's api key says."""
    return (F.when(F.col("api_key") == ApiKey.SHARE_GROUP_HEARTBEAT, "share_group")
            .when(F.col("api_key") == ApiKey.STREAMS_GROUP_HEARTBEAT, "streams_group").otherwise("consumer_group"))


@intermediate
def handed_epochs(frames: DataFrame) -> DataFrame:
    """Successful responses that hand an epoch to a party."""
    def ok(*api_keys: int) -> DataFrame:
        return of_apis(frames, *api_keys).where(is_ok(F.col("error_code")))

    answered_member = F.coalesce(nonempty(response_str("$.member_id")), F.col("member_id"))
    heartbeats = ok(*MEMBER_HEARTBEATS, ApiKey.SHARE_GROUP_HEARTBEAT).where(F.col("response_member_epoch") > 0)
    joins = ok(ApiKey.JOIN_GROUP)
    generation = F.coalesce(response_str("$.generation_id").cast("int"), F.col("generation_id"))
    producers = ok(ApiKey.INIT_PRODUCER_ID, ApiKey.END_TXN).where(
        response_str("$.producer_epoch").isNotNull() & (response_str("$.producer_id").cast("long") >= 0))
    answered_pid = response_str("$.producer_id").cast("long")
    sessions = ok(ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE).where(F.col("share_session_epoch") >= 0)
    next_session_epoch = F.when(F.col("share_session_epoch") == F.lit(2**31 - 1), 1).otherwise(
        F.col("share_session_epoch") + 1)
    ts = F.coalesce("ts_response", "ts_request")
    return (
        _event(heartbeats, _heartbeat_kind(), _member_party(answered_member), F.col("response_member_epoch"), True, ts,
               member_id=answered_member)
        .unionByName(_event(joins, F.lit("classic_group"), _member_party(answered_member), generation, True, ts,
                            member_id=answered_member))
        .unionByName(_event(producers, F.lit("producer"), F.concat(F.lit("pid:"), answered_pid),
                            response_str("$.producer_epoch"), True, ts, producer_id=answered_pid))
        .unionByName(_event(sessions, F.lit("share_group"),
                            F.concat(F.lit("share:"), _member_party(F.col("member_id"))), next_session_epoch, True, ts))
    )


def _produce_epochs(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """Produce requests with the producer id / epoch of their batches (the request header carries neither)."""
    per_request = (batches.where((F.col("direction") == "produce") & (F.col("producer_id") >= 0))
                   .groupBy("conn_id", "correlation_id")
                   .agg(F.min("producer_id").alias("b_producer_id"), F.min("producer_epoch").alias("b_epoch")))
    return (of_apis(frames, ApiKey.PRODUCE)
            .join(per_request, ["conn_id", "correlation_id"], "inner")
            .withColumns({"producer_id": F.coalesce("producer_id", "b_producer_id"),
                          "producer_epoch": F.coalesce(F.col("producer_epoch"), F.col("b_epoch"))})
            .drop("b_producer_id", "b_epoch"))


def used_epochs(frames: DataFrame, batches: DataFrame) -> DataFrame:
    """Every request that names a fenceable party, with the epoch it used (null or negative when it sent none:
    joins and leaves); rejected requests included."""
    kinds = group_kinds(frames)
    ts = F.coalesce("ts_request", "ts_response")
    named = F.col("member_id").isNotNull() & (F.col("member_id") != "")
    heartbeats = of_apis(frames, *MEMBER_HEARTBEATS, ApiKey.SHARE_GROUP_HEARTBEAT).where(named)
    kind = F.coalesce("kind", F.lit("classic_group"))
    sent = F.coalesce(request_str("$.generation_id_or_member_epoch").cast("int"),
                      request_str("$.generation_id").cast("int"))
    classic = (of_apis(frames, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.SYNC_GROUP, ApiKey.OFFSET_COMMIT,
                       ApiKey.TXN_OFFSET_COMMIT, ApiKey.LEAVE_GROUP).where(named)
               .join(kinds, "group_id", "left")
               .withColumns({"kind": kind, "epoch": F.when(F.col("api_key") == ApiKey.JOIN_GROUP, F.lit(None))
                             .when(kind == "classic_group", F.coalesce(F.col("generation_id"), sent))
                             .otherwise(F.coalesce(F.col("member_epoch"), F.col("generation_id"), sent))}))
    # AddPartitionsToTxn v4+ is sent by brokers only: a partition leader verifying a producer's transactional Produce
    # with the coordinator (KIP-890); the producer's own request is the Produce, and its refusal is the Produce's.
    by_broker = (F.col("api_key") == ApiKey.ADD_PARTITIONS_TO_TXN) & (F.col("api_version") >= 4)
    txn = of_apis(frames, *TXN_APIS).where((F.col("producer_id") >= 0) & ~by_broker)
    reinit = (of_apis(frames, ApiKey.INIT_PRODUCER_ID)
              .withColumns({"producer_id": request_str("$.producer_id").cast("long"),
                            "producer_epoch": request_str("$.producer_epoch").cast("int")})
              .where(F.col("producer_id") >= 0))
    producers = txn.unionByName(reinit).unionByName(_produce_epochs(frames, batches))
    sessions = of_apis(frames, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE).where(named)
    return (
        _event(heartbeats, _heartbeat_kind(), _member_party(F.col("member_id")), F.col("member_epoch"), False, ts)
        .unionByName(_event(classic, F.col("kind"), _member_party(F.col("member_id")), F.col("epoch"), False, ts))
        .unionByName(_event(producers, F.lit("producer"), F.concat(F.lit("pid:"), F.col("producer_id").cast("long")),
                            F.col("producer_epoch"), False, ts))
        .unionByName(_event(sessions, F.lit("share_group"),
                            F.concat(F.lit("share:"), _member_party(F.col("member_id"))),
                            F.col("share_session_epoch"), False, ts))
    )


def with_current_epoch(events: DataFrame) -> DataFrame:
    """Add `current_epoch` / `current_epoch_source`: the latest epoch handed to the party strictly before each event
    (handed events sort before usage at the same microsecond: a response precedes the next request)."""
    before = (Window.partitionBy("party").orderBy(F.col("ts"), F.col("handed").desc(), "conn_id", "correlation_id")
              .rowsBetween(Window.unboundedPreceding, -1))
    source = response_source(F.col("api_name"), F.col("ts"))
    return events.withColumns({
        "current_epoch": F.last(F.when(F.col("handed"), F.col("epoch")), ignorenulls=True).over(before),
        "current_epoch_source": F.last(F.when(F.col("handed"), source), ignorenulls=True).over(before)})


def epoch_events(frames: DataFrame) -> DataFrame:
    """sessions/epoch_events: handed epochs where they changed for their party (heartbeat responses repeat the
    member's epoch; share session epochs move on with every request and are left out)."""
    handed = handed_epochs(frames).where(~F.col("party").startswith("share:"))
    order = Window.partitionBy("party").orderBy("ts", "conn_id", "correlation_id")
    return (handed.withColumn("previous_epoch", F.lag("epoch").over(order))
            .where(F.col("previous_epoch").isNull() | (F.col("epoch") != F.col("previous_epoch")))
            .select("kind", "party", "group_id", "member_id", "transactional_id", "producer_id", "epoch",
                    "previous_epoch", "ts", "api_name", "correlation_id", "conn_id", "client_id"))
