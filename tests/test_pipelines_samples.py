"""End to end: the bundled sample captures, dissected and analyzed, against the samples' ground truth.

All samples are dissected into one OUT (as `pipelines/dissect.py` does for many captures) and analyzed in one run,
so the Spark cost is paid once; each sample is then checked on its own topics, groups and clients.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipelines.report import JOBS, run
from pipelines.testing import rows

pytestmark = pytest.mark.spark

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TRUTHS = sorted(p for p in SAMPLES.glob("*.truth.json") if (SAMPLES / json.loads(p.read_text())["capture"]).exists())


@pytest.fixture(scope="session")
def analyzed(spark, tmp_path_factory):
    """(truths by sample, summary, report dir): every sample dissected with records, then every job run once."""
    if not TRUTHS:
        pytest.skip("no sample captures with ground truth")
    from dissect.run import dissect_captures

    work = tmp_path_factory.mktemp("samples")
    out = work / "out"
    truths = {}
    for i, path in enumerate(TRUTHS):
        truth = json.loads(path.read_text())
        truths[truth["sample"]] = truth
        one = work / truth["sample"]
        dissect_captures([str(SAMPLES / truth["capture"])], str(one), ports=truth["broker_ports"], records=True)
        for table in one.iterdir():
            if table.is_dir():
                (out / table.name).mkdir(parents=True, exist_ok=True)
                for part in table.glob("part-*.parquet"):
                    shutil.copy(part, out / table.name / f"part-{i:03d}-{part.name}")
    report = work / "report"
    summary = run(spark, str(out), str(report), list(JOBS))
    return truths, summary, report


def _table(spark, report: Path, name: str) -> list[dict]:
    return rows(spark.read.parquet(str(report / name)))


def _topics(truth: dict) -> set[str]:
    return set(truth["topics"])


def _sample_ids(truth: dict) -> list[str]:
    return [t.stem.removesuffix(".truth") for t in TRUTHS]


@pytest.mark.parametrize("sample", [p.name.removesuffix(".truth.json") for p in TRUTHS])
def test_fenced_epochs_match_truth(spark, analyzed, sample):
    truths, _, report = analyzed
    truth = truths[sample]
    clients = {c["client_id"] for c in truth["clients"]}
    keys = ("kind", "group_id", "transactional_id", "member_id", "producer_id", "error_name", "client_id")
    got = Counter(tuple(r[k] for k in keys) for r in _table(spark, report, "fenced_epochs")
                  if r["client_id"] in clients)
    want = Counter(tuple(f[k] for k in keys) for f in truth["fenced_epochs"])
    assert got == want


@pytest.mark.parametrize("sample", [p.name.removesuffix(".truth.json") for p in TRUTHS])
def test_duplicate_deliveries_match_truth(spark, analyzed, sample):
    truths, _, report = analyzed
    truth = truths[sample]
    keys = ("kind", "group_id", "topic", "partition", "first_offset", "last_offset", "deliveries")
    mine = [r for r in _table(spark, report, "duplicate_deliveries")
            if r["topic"] in _topics(truth) and not r["possible"] and not r["wire_only"]]
    assert Counter(tuple(r[k] for k in keys) for r in mine) == Counter(
        tuple(d[k] for k in keys) for d in truth["duplicate_deliveries"])
    again: Counter = Counter()
    for r in mine:
        again[r["kind"]] += r["records"] * (r["deliveries"] - 1)
    assert {k: v for k, v in again.items() if v} == {k: v for k, v in truth["duplicate_records"].items() if v}


@pytest.mark.parametrize("sample", [p.name.removesuffix(".truth.json") for p in TRUTHS])
def test_records_per_partition_match_truth(spark, analyzed, sample):
    truths, _, report = analyzed
    truth = truths[sample]
    produced: Counter = Counter()
    for r in _table(spark, report, "throughput/data"):
        if r["direction"] == "produce" and r["topic"] in _topics(truth):
            produced[f"{r['topic']}/{r['partition']}"] += r["records"]
    assert dict(produced) == truth["produced_by_partition"]


def test_summary_headlines(analyzed):
    truths, summary, report = analyzed
    assert summary["fenced_epochs"] == sum(len(t["fenced_epochs"]) for t in truths.values())
    want: Counter = Counter()
    for t in truths.values():
        want.update(t["duplicate_records"])
    assert summary["duplicate_records"] == {k: v for k, v in want.items() if v}
    assert summary["frames"] > 0 and summary["connections"] > 0 and summary["capture_span_s"] > 0
    assert json.loads((report / "summary.json").read_text()) == summary
