"""The package archive shipped to a cluster's executors: what it holds, that it is built once, and that it imports
(compiled core included) on a Python that does not have kafkatap installed, unpacked as an executor unpacks it."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from kafkatap.dissect import native
from kafkatap.pipelines import ship
from tests.support.spark_cluster import bare_python


def test_the_archive_holds_what_tasks_import_and_nothing_else(tmp_path):
    archive = ship.build_archive(tmp_path)
    assert ship.build_archive(tmp_path) == archive and len(list(tmp_path.iterdir())) == 1  # built once per content
    names = zipfile.ZipFile(archive).namelist()
    assert {"__init__.py", "errors.py", "dissect/run.py", "pipelines/filesystems.py", "pipelines/log4j2.properties",
            "pipelines/transforms/throughput.py"} <= set(names)
    assert sum(name.endswith(".so") for name in names) == len(native.EXTENSIONS) + len(native.COMPILED_SOURCES)
    assert not [n for n in names if n.startswith(("samples/", "capture/", "dashboards/")) or "__pycache__" in n
                or n.endswith((".c", ".pyx", ".pcapng"))]


@pytest.mark.slow
def test_the_shipped_archive_imports_on_a_python_without_kafkatap(tmp_path):
    archive = ship.build_archive(tmp_path / "cache")
    unpacked = tmp_path / "files"
    zipfile.ZipFile(archive).extractall(unpacked / ship.ARCHIVE_NAME)  # as an executor unpacks `archive#kafkatap`
    probe = ("import kafkatap, kafkatap.pipelines.filesystems, kafkatap.pipelines.transforms.throughput\n"
             "from kafkatap.dissect import native\n"
             "print(kafkatap.__file__); print(sorted(native.missing()))")
    result = subprocess.run([str(bare_python(tmp_path)), "-c", probe], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(unpacked), "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    where, missing = result.stdout.splitlines()
    assert Path(where) == unpacked / "kafkatap" / "__init__.py"
    assert missing == "[]"  # the compiled core loads from the unpacked archive


