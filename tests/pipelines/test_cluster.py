"""The pipelines on a real Spark standalone cluster (a master and two one-core workers on 127.0.0.1), run as a user
runs them: through the `kafkatap` command with `--master spark://…`, each run a driver process of its own (one
SparkContext per process, and this one already holds the tests' local session).

A cluster's results must equal local mode's, table by table; the package reaches executors without anyone packing
it, and runs there even on a Python that does not have kafkatap installed, compiled core included.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatap.pipelines import ship
from kafkatap.pipelines.schema import TABLES
from tests.support.bulk import chatty_pcap
from tests.support.cli import run_cli
from tests.support.paths import SAMPLES
from tests.support.spark_cluster import Cluster, bare_python, client_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SAMPLE = "day_in_the_life"
TIMEOUT_S = 900


def ports(sample: str) -> list[str]:
    truth = json.loads((SAMPLES / f"{sample}.truth.json").read_text())
    return [arg for port in truth["broker_ports"] for arg in ("--port", str(port))]


def table_rows(folder: Path) -> list[str] | None:
    """A Parquet table's rows as sorted JSON lines (None when the table was not written): order-free equality."""
    if not folder.exists():
        return None
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in pq.read_table(folder).to_pylist())


def finished_app(cluster: Cluster, name: str, timeout: float = 60.0) -> dict:
    """The newest completed application called `name`; the master hears of an app's end a moment after its
    driver exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        apps = [a for a in cluster.state()["completedapps"] if a["name"] == name]
        if apps:
            return max(apps, key=lambda a: a["starttime"])
        time.sleep(0.5)
    raise AssertionError(f"no completed {name} application on the master: {cluster.state()}")


def assert_ran_on_both_workers(cluster: Cluster, app: dict) -> None:
    """Both workers launched an executor for the app, and each unpacked the shipped package."""
    dirs = cluster.executor_dirs(app["id"])
    assert app["cores"] == 2 and len({d.parent.parent for d in dirs}) == 2, (app, dirs)
    for d in dirs:
        assert (d / ship.ARCHIVE_NAME / "__init__.py").is_file(), list(d.iterdir())


@pytest.fixture(scope="module")
def dissected(demo_report: Path) -> Path:
    """The sample's tables with its records, as `kafkatap report` dissected them for the run's `demo_report`."""
    return demo_report / "dissected"


def test_analyze_on_the_cluster_equals_local(cluster, demo_report, tmp_path):
    """`kafkatap analyze --master spark://…` writes the tables and summary the local run of `kafkatap report` wrote
    from the same dissected tables."""
    result = run_cli("analyze", str(demo_report / "dissected"), "-o", str(tmp_path / "cluster"), "--master",
                     cluster.master, env=client_env(), timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert_ran_on_both_workers(cluster, finished_app(cluster, "kafkatap-analyze"))
    for name in TABLES:
        local = table_rows(demo_report / "report" / name)
        assert local is not None, name
        assert table_rows(tmp_path / "cluster" / name) == local, name
    summaries = [json.loads((folder / "summary.json").read_text()) for folder in (demo_report / "report",
                                                                                 tmp_path / "cluster")]
    assert summaries[0] == summaries[1]


# A driver whose two tasks report where their kafkatap came from and whether its compiled core runs, and dissect the
# sample on the executor (the dissector's whole import graph, on the executor's Python).
PROBE = """
import json, sys, tempfile
from kafkatap.pipelines.spark import get_spark

def probe(_):
    import kafkatap
    from kafkatap.dissect import native
    from kafkatap.dissect.run import dissect_captures
    with tempfile.TemporaryDirectory() as out:
        summary = dissect_captures([sys_argv[2]], out, ports=json.loads(sys_argv[3]))
    return {"file": kafkatap.__file__, "missing": sorted(native.missing()), "compiled": native.compiled,
            "frames": summary["rows"]["frames"]}

sys_argv = sys.argv
spark = get_spark("kafkatap-probe", sys.argv[1])
print(json.dumps(spark.sparkContext.parallelize(range(2), 2).map(probe).collect()))
spark.stop()
"""


def test_executors_without_kafkatap_run_the_shipped_package(cluster, dissected, tmp_path):
    """Executors whose Python lacks kafkatap import the package the driver shipped (unpacked in their folder),
    compiled core included, and dissect with it as the driver does."""
    truth = json.loads((SAMPLES / f"{SAMPLE}.truth.json").read_text())
    env = client_env(PYSPARK_PYTHON=str(bare_python(tmp_path)))
    result = subprocess.run([sys.executable, "-c", PROBE, cluster.master, str(SAMPLES / f"{SAMPLE}.pcapng"),
                             json.dumps(truth["broker_ports"])], capture_output=True, text=True, env=env,
                            timeout=TIMEOUT_S, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tasks = json.loads(result.stdout.splitlines()[-1])
    app = finished_app(cluster, "kafkatap-probe")
    shipped = {d / ship.ARCHIVE_NAME / "__init__.py" for d in cluster.executor_dirs(app["id"])}
    frames = json.loads((dissected / "summary.json").read_text())["rows"]["frames"]
    for task in tasks:
        assert Path(task["file"]).resolve() in {p.resolve() for p in shipped}, (task, shipped)
        assert task["missing"] == [] and task["compiled"], task
        assert task["frames"] == frames


# How the run went, not what the capture holds: Spark's splits and partitions, and how many rows a partition wrote
# before a frame another partition read named their topic (each sees only its own connections' Metadata).
RUN_ONLY = ("splits", "workers", "topic_ids_named_late")


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in RUN_ONLY}


def on_cluster(cluster: Cluster, captures: list[Path], out: Path, port_args: list[str], split_mib: int) -> dict:
    result = run_cli("dissect", *map(str, captures), "-o", str(out), *port_args, "-q", "--master", cluster.master,
                     "--split-size", str(split_mib), env=client_env(), timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "summary.json").read_text())


def sorted_table(folder: Path, drop: tuple[str, ...] = ()) -> pa.Table:
    table = pq.read_table(folder)
    table = table.drop_columns([c for c in drop if c in table.column_names])
    return table.sort_by([(name, "ascending") for name in table.column_names
                          if not pa.types.is_nested(table.schema.field(name).type)])


def test_dissect_on_the_cluster_equals_local(cluster, dissected, tmp_path):
    """`kafkatap dissect --master` on 1 MiB splits (two tasks for the 1.9 MB sample) writes the tables a local
    dissect writes."""
    out = tmp_path / "out"
    result = run_cli("dissect", str(SAMPLES / f"{SAMPLE}.pcapng"), "-o", str(out), *ports(SAMPLE), "--records", "-q",
                     "--master", cluster.master, "--split-size", "1", env=client_env(), timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert_ran_on_both_workers(cluster, finished_app(cluster, "kafkatap-dissect"))
    for name in ("frames", "batches", "records", "share", "anomalies"):
        assert table_rows(out / name) == table_rows(dissected / name), name
    summaries = [json.loads((folder / "summary.json").read_text()) for folder in (dissected, out)]
    assert summaries[1]["splits"] == 2
    assert comparable(summaries[1]) == comparable(summaries[0])


def test_a_131_mb_capture_is_dissected_in_many_tasks_as_locally(cluster, tmp_path):
    """One file of 131 MB of small Fetch pairs (the shape of a busy 1,500-byte network), read in 16 MiB splits by
    both workers: every table equals the one-process dissect."""
    capture = chatty_pcap(tmp_path / "chatty.pcap", connections=64, pairs=3400)
    assert 125e6 < capture.stat().st_size < 140e6
    local = tmp_path / "local"
    assert run_cli("dissect", str(capture), "-o", str(local), "-q", timeout=TIMEOUT_S).returncode == 0
    summary = on_cluster(cluster, [capture], tmp_path / "spark", [], 16)
    assert_ran_on_both_workers(cluster, finished_app(cluster, "kafkatap-dissect"))
    assert summary["splits"] == -(-capture.stat().st_size // (16 << 20)) >= 8
    for name in ("frames", "batches", "anomalies"):
        assert sorted_table(tmp_path / "spark" / name).equals(sorted_table(local / name)), name
    assert comparable(summary) == comparable(json.loads((local / "summary.json").read_text()))


def test_a_ring_of_files_is_one_capture_on_the_cluster(cluster, dissected, tmp_path):
    """The sample cut into a ring named as dumpcap names one (kafkatap_00000_<time>.pcapng, ...): connections cross
    the files, and the ring dissects on the cluster as the single file does locally."""
    cut = tmp_path / "cut"
    cut.mkdir()
    subprocess.run(["editcap", "-c", "3000", str(SAMPLES / f"{SAMPLE}.pcapng"), str(cut / "ring.pcapng")],
                   check=True, capture_output=True)
    ring = [part.rename(tmp_path / f"kafkatap_{n:05d}_20261124{93000 + n:06d}.pcapng")
            for n, part in enumerate(sorted(cut.iterdir()))]
    assert len(ring) >= 3
    summary = on_cluster(cluster, ring, tmp_path / "spark", ports(SAMPLE), 1)
    assert summary["splits"] >= len(ring)
    whole = json.loads((dissected / "summary.json").read_text())
    assert summary["frames_by_status"] == whole["frames_by_status"]
    # the ring's files and packet numbers differ from the single file's (tests/pipelines/test_spark_dissect.py checks a
    # ring's against a local run of the same ring), and without --records its batches have no fingerprints
    # (test_dissect_on_the_cluster_equals_local compares them)
    where = ("capture_file", "packet_index", "request_file", "request_packet", "response_file", "response_packet",
             "fingerprint")
    for name in ("frames", "batches", "share", "anomalies"):
        assert sorted_table(tmp_path / "spark" / name, where).equals(sorted_table(dissected / name, where)), name
