"""The duplicate_deliveries table: every kind of duplicate, in the same columns."""

from __future__ import annotations

from pyspark.sql import DataFrame

from kafkatap.pipelines.transforms.duplicates.consumer import consumer_duplicates
from kafkatap.pipelines.transforms.duplicates.producer import producer_duplicates
from kafkatap.pipelines.transforms.duplicates.share import share_duplicates


def duplicate_deliveries(frames: DataFrame, batches: DataFrame, records: DataFrame | None, share: DataFrame,
                         spans: DataFrame, fenced: DataFrame) -> DataFrame:
    """`spans` are the members' lifetimes (fetches are linked to members through them) and `fenced` the
    fenced_epochs table (a fencing is the strongest cause of a consumer redelivery)."""
    return (consumer_duplicates(batches, records, spans, frames, fenced)
            .unionByName(share_duplicates(share))
            .unionByName(producer_duplicates(batches, records is not None)))
