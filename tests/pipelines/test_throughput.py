"""throughput tables on hand-made frames."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES
from kafkatap.pipelines import schema
from kafkatap.pipelines.transforms import throughput
from kafkatap.pipelines.storage import conform
from tests.support.dissected_rows import assert_frames_equal, batch, frame, rows, t, table

pytestmark = pytest.mark.spark


def test_data_per_window_skips_control_batches(spark):
    batches = [batch("produce", 0.1, "t", 0, 0, 9, batch_bytes=200), batch("produce", 0.9, "t", 0, 0, 4),
               batch("produce", 0.5, "t", 0, 0, 0, is_control=True), batch("produce", 1.2, "t", 0, 0, 1)]
    got = conform(throughput.data(table(spark, BATCHES, batches), "1 seconds"), schema.THROUGHPUT_DATA)
    common = dict(direction="produce", topic="t", partition=0, client_id="app", broker_addr="10.0.0.9:9092")
    assert_frames_equal(got, table(spark, schema.THROUGHPUT_DATA, [
        dict(window_start=t(0), window_end=t(1), batches=2, records=15, bytes=300, **common),
        dict(window_start=t(1), window_end=t(2), batches=1, records=2, bytes=100, **common)]))


def test_requests_latency_and_errors(spark):
    frames = [frame(1, "Fetch", 0.1 * i, latency_s=0.001 * (i + 1)) for i in range(10)]
    frames[3]["error_code"], frames[3]["error_name"] = 6, "NOT_LEADER_OR_FOLLOWER"
    (r,) = rows(conform(throughput.requests(table(spark, FRAMES, frames), "1 seconds"), schema.THROUGHPUT_REQUESTS))
    assert (r["requests"], r["errors"], r["error_rate"], r["latency_p50_us"], r["latency_p99_us"],
            r["latency_max_us"]) == (10, 1, 0.1, 5000, 10000, 10000)


def test_lag_from_high_watermarks(spark):
    batches = [batch("fetch", 0.2, "t", 0, 0, 9, high_watermark=100),
               batch("fetch", 0.4, "t", 0, 10, 19, high_watermark=120)]
    (r,) = rows(conform(throughput.lag(table(spark, BATCHES, batches), "1 seconds"), schema.THROUGHPUT_LAG))
    assert (r["high_watermark"], r["next_offset"], r["lag"]) == (120, 20, 100)


def test_latency_percentiles_are_exact_over_the_whole_capture(spark):
    """The whole capture's p99, not a summary of the windows' (each window here has a p99 of 2 ms or less, and one
    slow request in a hundred)."""
    import numpy as np

    latencies = [0.001 + 0.00001 * (i % 7) for i in range(300)] + [0.2, 0.25, 0.3]
    frames = [frame(1, "Produce", 0.01 * i, latency_s=s) for i, s in enumerate(latencies)]
    frames.append(frame(1, "Produce", 4.0, ts_response=None, latency_us=None, response_bytes=None,
                        status="unpaired_request"))  # counted, not in the percentiles
    frames[5]["error_code"], frames[5]["error_name"] = 6, "NOT_LEADER_OR_FOLLOWER"
    (r,) = rows(conform(throughput.latency(table(spark, FRAMES, frames)), schema.THROUGHPUT_LATENCY))
    micros = np.array([f["latency_us"] for f in frames if f["latency_us"] is not None])
    assert (r["api_name"], r["requests"], r["answered"], r["errors"]) == ("Produce", 304, 303, 1)
    assert [r["latency_p50_us"], r["latency_p95_us"], r["latency_p99_us"]] == pytest.approx(
        list(np.percentile(micros, [50, 95, 99])))
    assert r["latency_max_us"] == 300000
