"""`kafkatap dissect` / `python -m kafkatap.dissect`: exit codes, outputs, and bad files among good ones."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from kafkatap.dissect import cli
from kafkatap.dissect.cli import main
from kafkatap.dissect.tables.schema import TABLES
from kafkatap.samples import load_truth
from tests.support.paths import SAMPLES

CAPTURES = sorted(SAMPLES.glob("*.pcapng"))


def port_of(capture: Path) -> str:
    return str(load_truth(capture.stem)["broker_ports"][0])


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(tmp_path / "missing.pcap"), "-o", str(tmp_path / "out")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["x.pcap"]) == 2  # no -o
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not CAPTURES, reason="no samples yet")
def test_a_non_capture_file_is_an_anomaly_exit_1_and_the_others_are_dissected(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("not a capture\n")
    out = tmp_path / "out"
    assert main([str(junk), str(CAPTURES[0]), "-o", str(out), "--port", port_of(CAPTURES[0]), "--records"]) == 1
    assert "1 of 2 inputs could not be read as captures" in capsys.readouterr().err
    anomalies = pq.read_table(out / "anomalies").to_pylist()
    assert [a["capture_file"] for a in anomalies if a["kind"] == "bad_capture_file"] == [str(junk)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"]["frames"] > 0 and summary["warnings"]
    for table in TABLES:
        assert (out / table / "part-00000.parquet").exists()


@pytest.mark.slow
@pytest.mark.skipif(not CAPTURES, reason="no samples yet")
def test_python_m_dissect_writes_tables_duckdb_reads(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "kafkatap.dissect", *map(str, CAPTURES), "-o", str(out),
                          *(f"--port={p}" for c in CAPTURES for p in load_truth(c.stem)["broker_ports"])],
                         capture_output=True, text=True, cwd=tmp_path)  # not the checkout: the installed package
    assert run.returncode == 0, run.stderr
    assert "kafkatap dissect" in run.stderr  # the summary table
    assert not (out / "records").exists()  # only with --records
    n = duckdb.sql(f"select count(*) from '{out}/frames/*.parquet'").fetchall()[0][0]
    assert n == json.loads((out / "summary.json").read_text())["rows"]["frames"] > 0
    # every share delivery the samples' clients logged is one offset acquired, and each ack one acknowledged
    share = dict(duckdb.sql(f"select kind, sum(last_offset - first_offset + 1) from '{out}/share/*.parquet' "
                            "group by kind").fetchall())
    deliveries = [d for c in CAPTURES for d in load_truth(c.stem)["share_deliveries"]]
    acked = [d for d in deliveries if d["ack"] is not None]  # a record held past its lock is never acknowledged
    assert deliveries and share == {"acquired": len(deliveries), "ack": len(acked)}


def test_the_command_freezes_what_its_imports_made_before_the_run(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`kafkatap dissect` hands the collector only what the run makes: the objects of the imports are frozen before
    it (the collector's passes and the interpreter's at exit skip them)."""
    frozen = []
    monkeypatch.setattr(cli, "dissect_captures", lambda *args, **kwargs: frozen.append(gc.get_freeze_count()) or {})
    args = cli.parser().parse_args([str(SAMPLES / "idempotent.pcapng"), "-o", str(tmp_path / "out")])
    try:
        cli.local(args, [9092], [])
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 10_000
