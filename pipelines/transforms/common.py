"""Kafka protocol facts the transforms share: fencing errors by party and group kinds, named through the generated
`ApiKey` and `ErrorCode` enums rather than typed-in numbers."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.protocol.generated.errors import ErrorCode
from kafkatap.pipelines.intermediates import api_keys_in, has_rows, intermediate
from kafkatap.pipelines.storage import client_host

SHARE_GROUP_APIS = [ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE]
TXN_APIS = [ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT]
MEMBER_HEARTBEATS = [ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT]
"""KIP-848 consumer and KIP-1071 streams group heartbeats: both carry the member id and epoch under the same rules
(epoch 0 joins, -1 leaves, -2 a static member leaves; the coordinator answers the epoch it hands the member)."""
MEMBER_EPOCH_KINDS = ["consumer_group", "streams_group"]
"""The group kinds whose members send `MEMBER_HEARTBEATS`: each member's own epoch is what the coordinator fences it by,
under the same rules for both."""
MEMBER_KINDS = ["classic_group", *MEMBER_EPOCH_KINDS]
"""The group kinds whose members the coordinator fences: classic members by the group's generation, the others by
their member epoch."""

MEMBER_FENCING = [e.name for e in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.STALE_MEMBER_EPOCH,
                                    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                                    ErrorCode.FENCED_INSTANCE_ID)]
PRODUCER_FENCING = [e.name for e in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
                                      ErrorCode.TRANSACTION_COORDINATOR_FENCED)]
SHARE_SESSION_FENCING = [ErrorCode.INVALID_SHARE_SESSION_EPOCH.name]
LEADER_FENCING = [ErrorCode.FENCED_LEADER_EPOCH.name]
FENCING_ERRORS = MEMBER_FENCING + PRODUCER_FENCING + SHARE_SESSION_FENCING + LEADER_FENCING


ISO = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'"
"""Timestamps as text in the report (evidence strings, summary.json): UTC, microseconds."""


def request_source() -> Column:
    """Which request a piece of evidence came from, `<api> request corr=<id> conn=<conn_id>`."""
    return F.concat(F.col("api_name"), F.lit(" request corr="), F.col("correlation_id").cast("string"),
                    F.lit(" conn="), F.col("conn_id"))


def response_source(api_name: Column, at: Column | None = None) -> Column:
    """Which response a piece of evidence came from, `<api> response corr=<id> conn=<conn_id>[ at <ts>]`: the form
    of the report's `current_epoch_source`."""
    parts = [api_name, F.lit(" response corr="), F.col("correlation_id").cast("string"), F.lit(" conn="),
             F.col("conn_id")]
    if at is not None:
        parts += [F.lit(" at "), F.date_format(at, ISO)]
    return F.concat(*parts)


def with_client_host(df: DataFrame) -> DataFrame:
    return df.withColumn("client_host", client_host(F.col("client_addr")))


def of_apis(frames: DataFrame, *api_keys: int) -> DataFrame:
    """`frames` of these apis. Inside a run whose frames hold none of them, an empty relation (`limit(0)`), which
    Spark's optimizer carries through the filters, joins, windows and aggregations after it: a table built only from
    them is then planned as the empty table it is, not as its whole plan over no rows (a capture without group or
    share traffic, like most)."""
    present = api_keys_in(frames)
    if present is not None and present.isdisjoint(api_keys):
        return frames.limit(0)
    return frames.where(F.col("api_key").isin(*api_keys))


def or_empty(df: DataFrame) -> DataFrame:
    """`df`, or inside a run where this input has no rows, an empty relation (`limit(0)`) for Spark's optimizer to
    carry, as `of_apis` does (the share table of a capture without share groups)."""
    return df.limit(0) if has_rows(df) is False else df


def response_str(path: str) -> Column:
    return F.get_json_object(F.col("response_json"), path)


def request_str(path: str) -> Column:
    return F.get_json_object(F.col("request_json"), path)


@intermediate
def group_kinds(frames: DataFrame) -> DataFrame:
    """(group_id, kind): a group is `streams_group` if any StreamsGroupHeartbeat names it, `consumer_group` if any
    ConsumerGroupHeartbeat does, `share_group` for share apis, else `classic_group` (JoinGroup / OffsetCommit-only
    groups)."""
    rank = (F.when(F.col("api_key") == ApiKey.STREAMS_GROUP_HEARTBEAT, 4)
            .when(F.col("api_key") == ApiKey.CONSUMER_GROUP_HEARTBEAT, 3)
            .when(F.col("api_key").isin(SHARE_GROUP_APIS), 2)
            .otherwise(1))
    return (frames.where(F.col("group_id").isNotNull() & (F.col("group_id") != ""))
            .groupBy("group_id").agg(F.max(rank).alias("rank"))
            .select("group_id", F.element_at(F.array(F.lit("classic_group"), F.lit("share_group"),
                                                     F.lit("consumer_group"), F.lit("streams_group")),
                                            F.col("rank")).alias("kind")))


@intermediate
def capture_bounds(frames: DataFrame) -> DataFrame:
    """One row: (capture_start, capture_end) over every request and response time."""
    return frames.agg(F.min(F.least("ts_request", "ts_response")).alias("capture_start"),
                      F.max(F.greatest("ts_request", "ts_response")).alias("capture_end"))


def is_ok(error_code: Column) -> Column:
    """Responses that succeeded: error code 0 (null means no response, which is not a success)."""
    return F.coalesce(error_code == 0, F.lit(False))


def batch_taken() -> Column:
    """Record batches their partition's answer did not refuse (`partition_error_code` 0, or no answer seen): a
    produced batch the leader refused (NOT_LEADER_OR_FOLLOWER while leadership moves) is sent again and counts then,
    and a refused fetch delivered nothing."""
    return F.coalesce(F.col("partition_error_code"), F.lit(0)) == 0


def nonempty(col: Column) -> Column:
    return F.when(col != "", col)
