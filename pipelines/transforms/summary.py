"""REPORT/summary.json: the headline counts the dashboard shows, from the inputs and the report's tables."""

from __future__ import annotations

import functools
import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkatap.pipelines.transforms.common import ISO, batch_taken


class _Queries:
    """The summary's aggregations, run as one Spark job: each row as JSON under its query's name.

    Each one a job of its own (about twenty on a full report) cost more to plan and schedule than to compute: over a
    small input most of their time was per-job overhead."""

    def __init__(self) -> None:
        self._parts: list[DataFrame] = []
        self._rows: dict[str, list[dict]] | None = None

    def add(self, name: str, df: DataFrame) -> None:
        row = F.to_json(F.struct(*[F.col(c) for c in df.columns]), {"ignoreNullFields": "false"})
        self._parts.append(df.select(F.lit(name).alias("query"), row.alias("row")))

    def __getitem__(self, name: str) -> list[dict]:
        if self._rows is None:
            self._rows = {}
            for r in functools.reduce(DataFrame.unionByName, self._parts).collect():
                self._rows.setdefault(r["query"], []).append(json.loads(r["row"]))
        return self._rows.get(name, [])


def _count(df: DataFrame) -> DataFrame:
    return df.agg(F.count(F.lit(1)).alias("n"))


def _by_kind(rows: list[dict], field: str = "ranges") -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["kind"]] = out.get(r["kind"], 0) + int(r[field] or 0)
    return out


_INPUT_QUERIES = ("frames", "errors", "data", "anomalies")


def input_counts(frames: DataFrame, batches: DataFrame, anomalies: DataFrame) -> dict[str, list[dict]]:
    """The summary's counts of the inputs, one Spark job. They read no report table, so a run collects them on a job
    thread once every job has started (`report._run_jobs`), beside its last jobs instead of after them: on the
    228k-frame chatty capture, the query the run ended with alone (1.2 s) was mostly these."""
    q = _Queries()
    q.add("frames", frames.agg(
        F.count(F.lit(1)).alias("frames"),
        F.date_format(F.min(F.least("ts_request", "ts_response")), ISO).alias("start"),
        F.date_format(F.max(F.greatest("ts_request", "ts_response")), ISO).alias("end"),
        ((F.unix_micros(F.max(F.greatest("ts_request", "ts_response")))
          - F.unix_micros(F.min(F.least("ts_request", "ts_response")))) / 1e6).alias("span"),
        # distinct values as the size of their sets: countDistinct's plan copies every frame once per column
        # (Expand), 0.75 s of the 228k-frame chatty capture's last query
        *[F.size(F.collect_set(c)).alias(name)
          for c, name in (("client_id", "clients"), ("broker_addr", "brokers"), ("conn_id", "connections"))]))
    q.add("errors", frames.where(F.col("error_code") != 0).groupBy("error_name").agg(F.count(F.lit(1)).alias("n")))
    # written: a batch the leader refused (NOT_LEADER_OR_FOLLOWER while leadership moves) is sent again and counted
    # then; consumed: followers' replication fetches (direction `replication`) are not consumption
    written = batch_taken()
    q.add("data", batches.where(~F.coalesce(F.col("is_control"), F.lit(False))).agg(
        F.sum(F.when((F.col("direction") == "produce") & written, F.col("record_count"))).alias("produced"),
        F.sum(F.when(F.col("direction").isin("fetch", "share_fetch"), F.col("record_count"))).alias("fetched")))
    q.add("anomalies", _count(anomalies))
    return {name: q[name] for name in _INPUT_QUERIES}


def summary(counts: dict[str, list[dict]], tables: dict[str, DataFrame], window: str) -> dict:
    """summary.json from the inputs' `counts` (`input_counts`) and the report's `tables`, whose counts are one more
    Spark job."""
    q = _Queries()
    for name in ("sessions/connections", "sessions/members", "sessions/share_members", "sessions/producers",
                 "share_spso/pinned", "ownership_conflicts"):
        if name in tables:
            q.add(name, _count(tables[name]))
    if "sessions/groups" in tables:
        q.add("sessions/groups", tables["sessions/groups"].agg(
            F.count(F.lit(1)).alias("groups"), F.count(F.when(F.col("commit_only"), 1)).alias("commit_only")))
    if "sessions/transactions" in tables:
        q.add("sessions/transactions",
              tables["sessions/transactions"].groupBy("outcome").agg(F.count(F.lit(1)).alias("n")))
    if "fenced_epochs" in tables:
        q.add("fenced_epochs", tables["fenced_epochs"].groupBy("kind", "inferred").agg(F.count(F.lit(1)).alias("n")))
        q.add("fenced_causes", tables["fenced_epochs"].groupBy("cause").agg(F.count(F.lit(1)).alias("n")))
    if "duplicate_deliveries" in tables:
        again = F.sum(F.col("records") * (F.col("deliveries") - 1)).alias("again")
        q.add("duplicate_deliveries", tables["duplicate_deliveries"].groupBy("kind", "possible", "wire_only")
              .agg(F.count(F.lit(1)).alias("ranges"), again))
    if "share_records" in tables:
        q.add("share_records", tables["share_records"]
              .groupBy("final_state", (F.col("archive_reason") == "delivery_limit").alias("poison"))
              .agg(F.count(F.lit(1)).alias("n"), F.sum("records").alias("records"),
                   F.sum("lock_expiries").alias("expiries")))
    if "rebalances" in tables:
        q.add("rebalances", tables["rebalances"].groupBy("group_id").agg(
            F.count(F.lit(1)).alias("episodes"), F.sum("stalled_s").alias("stalled_s"),
            F.sum("fetch_gap_s").alias("fetch_gap_s")))
    if "e2e_latency" in tables:
        q.add("e2e_latency", tables["e2e_latency"].groupBy("topic").agg(F.max("p99_ms").alias("p99")))

    f, = counts["frames"]
    by_name = counts["errors"]
    data, = counts["data"]
    out: dict = {
        "frames": f["frames"], "capture_start": f["start"], "capture_end": f["end"],
        "capture_span_s": float(f["span"] or 0.0),
        "connections": f["connections"], "clients": f["clients"], "brokers": f["brokers"],
        "errors": sum(r["n"] for r in by_name),
        "errors_by_name": {r["error_name"] or "unknown": r["n"] for r in by_name},
        "produced_records": int(data["produced"] or 0), "fetched_records": int(data["fetched"] or 0),
        "anomalies": counts["anomalies"][0]["n"], "window": window,
    }
    if "sessions/connections" in tables:
        out["connections"] = q["sessions/connections"][0]["n"]
    members = [n for n in ("sessions/members", "sessions/share_members") if n in tables]
    if members:
        out["members"] = sum(q[n][0]["n"] for n in members)
    if "sessions/groups" in tables:
        kinds, = q["sessions/groups"]
        out["groups"], out["commit_only_groups"] = kinds["groups"], kinds["commit_only"]
    if "sessions/producers" in tables:
        out["producers"] = q["sessions/producers"][0]["n"]
    if "sessions/transactions" in tables:
        outcomes = {r["outcome"]: r["n"] for r in q["sessions/transactions"]}
        out["transactions"] = {k: outcomes.get(k, 0) for k in ["commit", "abort", "fenced", "open"]}
    if "fenced_epochs" in tables:
        rows = q["fenced_epochs"]
        out["fenced_epochs"] = sum(r["n"] for r in rows)
        by_kind: dict[str, int] = {}
        for r in rows:
            by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + r["n"]
        by_kind["inferred"] = sum(r["n"] for r in rows if r["inferred"])
        out["fenced_epochs_by_kind"] = by_kind
        out["fenced_epochs_by_cause"] = {r["cause"] or "not_shown": r["n"] for r in q["fenced_causes"]}
    if "duplicate_deliveries" in tables:
        rows = q["duplicate_deliveries"]
        out["duplicate_ranges"] = _by_kind([r for r in rows if not r["possible"] and not r["wire_only"]])
        out["duplicate_records"] = _by_kind([r for r in rows if not r["possible"] and not r["wire_only"]], "again")
        out["wire_duplicate_records"] = _by_kind([r for r in rows if not r["possible"]], "again")
        out["possible_duplicate_records"] = int(sum(r["again"] or 0 for r in rows if r["possible"]))
        out["wire_only_ranges"] = int(sum(r["ranges"] for r in rows if r["wire_only"] and not r["possible"]))
        out["possible_ranges"] = int(sum(r["ranges"] for r in rows if r["possible"]))
    if "share_records" in tables:
        out |= _share_records(q["share_records"])
    if "share_spso/pinned" in tables:
        out["share_pinned_episodes"] = q["share_spso/pinned"][0]["n"]
    out |= _group_dynamics(tables, q)
    return out


def _group_dynamics(tables: dict[str, DataFrame], q: _Queries) -> dict:
    """Rebalances and stalled time per group, end-to-end p99 per topic, ownership conflicts."""
    out: dict = {}
    if "rebalances" in tables:
        out["rebalances"] = {r["group_id"]: {"episodes": r["episodes"], "stalled_s": float(r["stalled_s"] or 0.0),
                                             "fetch_gap_s": float(r["fetch_gap_s"] or 0.0)}
                             for r in q["rebalances"]}
    if "e2e_latency" in tables:
        out["e2e_p99_ms"] = {r["topic"]: r["p99"] for r in q["e2e_latency"] if r["p99"] is not None}
    if "ownership_conflicts" in tables:
        out["ownership_conflicts"] = q["ownership_conflicts"][0]["n"]
    return out


def _share_records(rows: list[dict]) -> dict:
    poison = [r for r in rows if r["poison"]]
    return {"share_records": {r["final_state"]: sum(x["n"] for x in rows if x["final_state"] == r["final_state"])
                              for r in rows},
            "share_poison_ranges": sum(r["n"] for r in poison),
            "share_poison_records": int(sum(r["records"] or 0 for r in poison)),
            "share_lock_expiries": int(sum(r["expiries"] or 0 for r in rows))}
