"""Regression guard for speed work on the engine: every table the dissector writes for each sample must stay the same,
row for row and value for value.

tests/data/dissect_golden_output.json holds, per sample (keyed by the sample file's sha256), the row count and a
sha256 of the content of every table (frames, batches, records with payloads, share, anomalies, connections) and
of summary.json (minus the file paths). It was generated from the engine before the chatty-path optimisation and
checked against the samples' ground truth by tests/dissect/test_samples.py. A sample that was re-recorded since has
another sha256 and fails: after checking the new output is right (tests/dissect/test_samples.py), regenerate the fixture with

    python -m tests.dissect.test_golden_output --regenerate
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.paths import DATA, ROOT, SAMPLES

FIXTURE = DATA / "dissect_golden_output.json"
REGENERATE = f"python -m {__name__} --regenerate"  # the module's name under pytest
TABLES = ("frames", "batches", "records", "share", "anomalies", "connections")

pytestmark = pytest.mark.slow


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def port_of(sample: Path) -> list[int]:
    truth = sample.with_name(sample.name.replace(".pcapng", ".truth.json"))
    return json.loads(truth.read_text())["broker_ports"] if truth.exists() else [9092]


def digest(paths: list[Path], out: Path, ports: list[int]) -> dict:
    """Row count and content hash of every table of one run (with --records --payloads), and of its summary."""
    summary = dissect_captures([str(p) for p in paths], str(out), ports=ports, records=True, payloads=True,
                               workers=1)
    result = {}
    for table in TABLES:
        data = pq.read_table(out / table)
        rows = data.to_pylist()
        for row in rows:  # the capture file paths (anomalies, frames) depend on where the repository is
            for column in ("capture_file", "request_file", "response_file"):
                if row.get(column):
                    row[column] = Path(row[column]).name
        rows = json.dumps(rows, default=repr).encode()
        result[table] = {"rows": data.num_rows, "sha256": hashlib.sha256(rows).hexdigest()}
    summary.pop("files")  # paths, like the capture_file column
    result["summary"] = hashlib.sha256(json.dumps(summary, sort_keys=True, default=repr).encode()).hexdigest()
    return result


def load() -> dict:
    return json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}


GOLDEN = load()


def test_every_sample_is_in_the_fixture() -> None:
    """A sample added without regenerating the fixture would otherwise go unguarded."""
    assert sorted(p.name for p in SAMPLES.glob("*.pcapng")) == sorted(GOLDEN), f"run `{REGENERATE}` from {ROOT}"


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_tables_are_unchanged(name: str, tmp_path: Path) -> None:
    expected = GOLDEN[name]
    sample = SAMPLES / name
    assert sample.exists() and file_sha(sample) == expected["sample_sha256"], (
        f"{name} was removed or re-recorded after {FIXTURE.name}: check its output against its truth, then run "
        f"`{REGENERATE}` from {ROOT}")
    got = digest([sample], tmp_path, port_of(sample))
    for table in TABLES:
        assert got[table] == expected[table], f"{name}: {table} changed"
    assert got["summary"] == expected["summary"], f"{name}: summary.json changed"


def regenerate() -> None:
    import tempfile

    golden = {}
    for sample in sorted(SAMPLES.glob("*.pcapng")):
        with tempfile.TemporaryDirectory() as tmp:
            golden[sample.name] = {"sample_sha256": file_sha(sample), **digest([sample], Path(tmp), port_of(sample))}
    FIXTURE.write_text(json.dumps(golden, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(__doc__)
    regenerate()
