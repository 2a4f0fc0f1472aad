"""The Python API as a notebook uses it, against the CLI: the same tables from `kafkatap.report(...)` as from
`kafkatap report`, `read` in pandas and in Spark, and clear errors for names that do not exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import kafkatap
from tests.support.paths import SAMPLES

SAMPLE = SAMPLES / "idempotent.pcapng"


def test_import_kafkatap_is_cheap_and_lists_its_functions() -> None:
    code = ("import sys, kafkatap; print(sorted(m for m in ('pyspark', 'pyarrow', 'numpy') if m in sys.modules)); "
            "print(kafkatap.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == "[]"
    assert {"dissect_captures", "analyze", "read", "dashboard", "report"} <= set(eval(out.splitlines()[1]))


def test_dissect_and_read_in_pandas(tmp_path: Path) -> None:
    summary = kafkatap.dissect_captures([SAMPLE], tmp_path / "out", records=True)
    frames = kafkatap.read(tmp_path / "out", "frames")
    assert isinstance(frames, pd.DataFrame) and len(frames) == summary["rows"]["frames"]
    from kafkatap.dissect.tables.schema import FRAMES

    assert list(frames.columns) == FRAMES.names
    # integers stay integers where some are null (unpaired halves have no error code), booleans stay booleans
    assert str(frames["error_code"].dtype) == "Int16" and frames["error_code"].isna().any()
    assert str(frames["latency_us"].dtype) == "Int64"
    assert str(kafkatap.read(tmp_path / "out", "batches")["is_control"].dtype) == "boolean"
    assert len(kafkatap.read(tmp_path / "out", "records")) == summary["rows"]["records"]
    with pytest.raises(ValueError, match="no table 'frame'"):
        kafkatap.read(tmp_path / "out", "frame")
    with pytest.raises(ValueError, match="has no table 'fenced_epochs'"):
        kafkatap.read(tmp_path / "out", "fenced_epochs")


@pytest.mark.spark
@pytest.mark.slow
def test_the_api_reproduces_the_cli_report(tmp_path: Path, spark) -> None:
    """`kafkatap report` in a terminal (a pseudo-terminal through util-linux `script`): one progress display over
    the stages, the closing summary, not one warning line; then the API writes the same tables."""
    command = f"{sys.executable} -m kafkatap.cli report {SAMPLE} -o {tmp_path / 'cli'}"
    cli = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert cli.returncode == 0, cli.stdout
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", cli.stdout).replace("\r", "\n")
    assert all(stage in screen for stage in ("dissect ", "analyze ", "starting Spark"))
    assert "kafkatap report" in screen and str(tmp_path / "cli" / "dashboard.html") in re.sub(r"\s+", "", screen)
    assert not re.search(r"WARN|Warning|log4j|incubator|Traceback", screen), screen
    done = kafkatap.report([SAMPLE], tmp_path / "api", spark=spark)
    assert done.page.exists() and done.report_summary["frames"] == done.dissect_summary["rows"]["frames"]
    assert json.loads((tmp_path / "cli" / "report" / "summary.json").read_text()) == done.report_summary
    for folder, names in kafkatap.tables().items():
        for name in names:
            root = "dissected" if folder == "dissect" else "report"
            if not (tmp_path / "cli" / root / name).exists():
                continue
            want = kafkatap.read(tmp_path / "cli" / root, name)
            got = kafkatap.read(tmp_path / "api" / root, name)
            key = list(want.columns)
            pd.testing.assert_frame_equal(_sorted(got, key), _sorted(want, key), obj=name)
    members = kafkatap.read(done.report, "sessions/producers", spark=spark)
    assert members.count() == len(kafkatap.read(done.report, "sessions/producers"))


def _sorted(df: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Rows in one order, and map cells (lists of pairs, in whatever order Spark built them) sorted."""
    def cell(v: object) -> str:
        return str(sorted(v) if isinstance(v, list) and v and isinstance(v[0], tuple) else v)

    return df.map(cell).sort_values(key).reset_index(drop=True)
