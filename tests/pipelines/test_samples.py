"""End to end: the bundled sample captures, dissected and analyzed, against the samples' ground truth.

Each sample is dissected (with records) and its fencings, duplicate deliveries and produced records are computed
with the transforms' functions and compared with the truth the workload recorded (`tests/support/truth_checks.py`);
one sample also goes through `kafkatap analyze` end to end. The real-broker samples are held to the same checks in
tests/pipelines/test_kafka44_samples.py, on the whole report its tests read anyway: analyzed once, not twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pyarrow.parquet as pq
from kafkatap.pipelines import schema
from kafkatap.pipelines.intermediates import once_per_run
from kafkatap.pipelines import cli as analyze
from kafkatap.pipelines.transforms.duplicates.table import duplicate_deliveries
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.report import job_main, read_inputs
from kafkatap.pipelines.storage import spark_schema
from kafkatap.pipelines.transforms.summary import input_counts, summary
from tests.support.dissected_rows import rows
from tests.support.paths import REAL_BROKER_SAMPLES, SAMPLES
from tests.support.truth_checks import (check_duplicates, check_fenced, check_frozen_member, check_produced, frozen,
                                        produced)

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.own_run]

TRUTHS = sorted(p for p in SAMPLES.glob("*.truth.json") if (SAMPLES / json.loads(p.read_text())["capture"]).exists()
                and p.name.removesuffix(".truth.json") not in REAL_BROKER_SAMPLES)


@pytest.fixture(scope="session")
def dissected(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    """Every sample dissected with records: {sample: (truth, OUT)}."""
    if not TRUTHS:
        pytest.skip("no sample captures with ground truth")
    from kafkatap.dissect.run import dissect_captures

    work = tmp_path_factory.mktemp("samples")
    out = {}
    for path in TRUTHS:
        truth = json.loads(path.read_text())
        dissect_captures([str(SAMPLES / truth["capture"])], str(work / truth["sample"]), ports=truth["broker_ports"],
                         records=True)
        out[truth["sample"]] = (truth, work / truth["sample"])
    return out


@pytest.fixture(scope="session")
def collected() -> dict[str, dict[str, list[dict]] | Exception]:
    """Each sample's results, or what failed them, kept for its other tests: a failure is not paid for again."""
    return {}


@pytest.fixture
def results(spark, dissected, collected, sample) -> dict[str, list[dict]]:
    """One sample's transforms, their pure functions collected directly (no report written: the Parquet round trip is
    tested once, in test_analyze_writes_the_report). Per sample, so that a Spark failure names its sample and fails
    that sample's tests, not every sample's."""
    if sample not in collected:
        try:
            collected[sample] = _collect(spark, dissected[sample][1])
        except Exception as exc:
            collected[sample] = exc
    if isinstance(collected[sample], Exception):
        raise collected[sample]
    return collected[sample]


def _collect(spark, root: Path) -> dict[str, list[dict]]:
    """Inside one run, as `analyze` computes them: the intermediates the transforms share are computed once."""
    inp = read_inputs(spark, str(root))
    with once_per_run(spark, inp.input_bytes):
        fenced = fenced_epochs(inp.frames, inp.batches)
        spans = member_spans(members(inp.frames, inp.batches))
        dups = duplicate_deliveries(inp.frames, inp.batches, inp.records, inp.share, spans, fenced)
        return {"fenced": rows(fenced.drop("ts")), "dups": rows(dups.drop("first_delivery_ts", "redelivery_ts")),
                "produced": rows(produced(inp.batches))}


SAMPLE_NAMES = [p.name.removesuffix(".truth.json") for p in TRUTHS]


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
def test_fenced_epochs_match_truth(dissected, results, sample):
    check_fenced(dissected[sample][0], results["fenced"])


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
def test_duplicate_deliveries_match_truth(dissected, results, sample):
    check_duplicates(dissected[sample][0], results["dups"])


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
def test_records_per_partition_match_truth(dissected, results, sample):
    check_produced(dissected[sample][0], results["produced"])


@pytest.fixture(scope="module")
def classic_report(spark, dissected, tmp_path_factory) -> Path:
    """`kafkatap analyze` of classic_group (a fenced member, re-deliveries, several generations) at a 500 ms window,
    once for the tests that read a whole report."""
    report = tmp_path_factory.mktemp("classic_report") / "report"
    assert analyze.main([str(dissected["classic_group"][1]), "-o", str(report), "--window", "500ms"]) == 0
    return report


def test_analyze_writes_the_report(dissected, classic_report):
    """The whole `kafkatap analyze` path: Parquet tables with the declared schemas and summary.json."""
    truth, _ = dissected["classic_group"]
    report = classic_report
    summary = json.loads((report / "summary.json").read_text())
    for name, declared in schema.TABLES.items():
        assert pq.read_schema(next((report / name).glob("*.parquet"))).names == declared.names, name
    assert truth["fenced_epochs"] and summary["fenced_epochs"] == len(truth["fenced_epochs"])
    assert summary["duplicate_records"] == {k: v for k, v in truth["duplicate_records"].items() if v}
    assert summary["window"] == "500ms" and summary["frames"] > 0 and summary["capture_span_s"] > 0
    assert set(summary) <= set(schema.SUMMARY_KEYS)  # every key docs/schemas.md documents
    assert summary["fenced_epochs_by_cause"] == {"session_timeout": 1}
    assert summary["errors_by_name"]["UNKNOWN_MEMBER_ID"] == sum(
        n for apis in truth["response_errors"].values() for errors in apis.values()
        for name, n in errors.items() if name == "UNKNOWN_MEMBER_ID")
    events = pq.read_table(report / "sessions/epoch_events").to_pylist()
    members_ = pq.read_table(report / "sessions/members").to_pylist()
    handed = {(e["group_id"], e["member_id"], e["epoch"]) for e in events if e["kind"] == "classic_group"}
    assert handed and handed == {(m["group_id"], m["member_id"], g) for m in members_ for g in m["generations"]
                                 if m["kind"] == "classic_group"}


def test_one_job_alone_runs_what_it_needs_and_writes_what_analyze_writes(dissected, classic_report, tmp_path):
    """A spark-submit job on its own (`job_main`, as pipelines/submit/e2e_latency.py runs it) runs the jobs whose
    tables it reads first, in the same run, and writes the rows the whole analysis writes; nothing more."""
    _, root = dissected["classic_group"]
    alone, whole = tmp_path / "alone", classic_report
    assert job_main("e2e_latency", ["--frames", str(root), "--out", str(alone), "--window", "500ms"]) == 0
    for name in ("e2e_latency", "sessions/fetch_links", "sessions/members"):
        got, want = (sorted(map(repr, pq.read_table(r / name).to_pylist())) for r in (alone, whole))
        assert got == want and want, name
    assert not (alone / "fenced_epochs").exists() and not (alone / "rebalances").exists()


def test_the_summary_is_one_spark_job_for_the_inputs_and_one_for_the_tables(spark, dissected):
    """summary.json's counts over the inputs are collected in one Spark job (which a run starts beside its last jobs),
    and its counts over every report table in one more: a job each (about twenty) cost more to plan and schedule than
    to compute."""
    _, root = dissected["classic_group"]
    inp = read_inputs(spark, str(root))
    tables = {name: spark.createDataFrame([], spark_schema(declared)) for name, declared in schema.TABLES.items()}
    sc = spark.sparkContext

    def spark_jobs(group: str, work):
        sc.setJobGroup(group, "the summary's Spark jobs")
        try:
            result = work()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        assert len(sc.statusTracker().getJobIdsForGroup(group)) == 1, group
        return result

    counts = spark_jobs("summary-inputs", lambda: input_counts(inp.frames, inp.batches, inp.anomalies))
    out = spark_jobs("summary-tables", lambda: summary(counts, tables, "1s"))
    assert out["frames"] > 0 and out["members"] == 0 and out["transactions"] == {
        "commit": 0, "abort": 0, "fenced": 0, "open": 0}


@pytest.mark.parametrize("sample", [p.name.removesuffix(".truth.json") for p in TRUTHS
                                    if frozen(json.loads(p.read_text()))])
def test_a_member_frozen_past_its_session_timeout_is_fenced_for_it(dissected, results, sample):
    """The member the workload froze (SIGSTOP) until the coordinator removed it is fenced for its session timeout."""
    check_frozen_member(dissected[sample][0], results["fenced"])
