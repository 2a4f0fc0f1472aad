"""Shipping the driver's kafkatap to a cluster's executors, so no one packages the code by hand.

What a pipeline task can import is the package root, the dissector and the pipelines (the layer rules forbid the
other stages), so those are shipped: their Python files, their compiled extension modules and their package data,
never the samples' captures, caches or build sources. They go as an archive Spark unpacks into each executor's
files folder under the name `kafkatap` (`addArchive(zip#kafkatap)`); PySpark puts that folder first on the Python
workers' path, so executors run the driver's code, whatever their Python has installed. Unpacked, not imported from
the zip as `--py-files` would: zipimport cannot load extension modules, and unpacked the compiled core loads wherever
the executors' Python matches the driver's (same version and platform, as in an environment packed from the
driver's); elsewhere the pure-Python twins run, with the same output.

The archive is named by a hash of its contents and kept in the temp folder, so a second run reuses it.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession

ROOT = "kafkatap"
STAGES = ("kafkatap.dissect", "kafkatap.pipelines")
DATA = (".py", ".properties")  # modules, and the package data the pipelines read (log4j2.properties)
ARCHIVE_NAME = "kafkatap"  # the folder each executor unpacks the archive into: an importable package name
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest date: entries carry no build time, so equal trees zip equally

log = logging.getLogger(__name__)


def _shipped(name: str) -> bool:
    return name.endswith(DATA) or name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def _folder(package: str) -> Path | None:
    """Where an imported or importable package's files are; None when they are not plain files (the package was
    itself imported from a zip, e.g. shipped by spark-submit's --py-files: its executors already have it)."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    folder = Path(locations[0]) if len(locations) == 1 else None
    return folder if folder is not None and folder.is_dir() else None


def package_files() -> Iterator[tuple[str, Path]]:
    """(name in the archive, file) for each shipped file. Found through the import system, not one folder: an
    editable install maps each stage onto its own folder of the checkout."""
    root = _folder(ROOT)
    if root is None:
        return
    for path in sorted(root.iterdir()):
        if path.is_file() and _shipped(path.name):
            yield path.name, path
    for stage in STAGES:
        folder = _folder(stage)
        if folder is None:
            continue
        prefix = "/".join(stage.split(".")[1:])
        for directory, subdirs, files in os.walk(folder):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__" and not d.startswith("."))
            here = Path(directory)
            for name in sorted(files):
                if _shipped(name):
                    yield f"{prefix}/{(here / name).relative_to(folder).as_posix()}", here / name


def build_archive(cache: Path | None = None) -> Path | None:
    """The archive of the package's shipped files, built once per content (None: nothing to ship, see `_folder`)."""
    files = list(package_files())
    if not files:
        return None
    digest = hashlib.sha256()
    for name, path in files:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    cache = cache or Path(tempfile.gettempdir()) / "kafkatap-ship"
    archive = cache / f"kafkatap-{digest.hexdigest()[:16]}.zip"
    if archive.exists():
        return archive
    cache.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.writing")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for name, path in files:
            entry = zipfile.ZipInfo(name, _EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            z.writestr(entry, path.read_bytes())
    os.replace(partial, archive)  # concurrent runs write the same bytes; the last rename wins
    return archive


def ship(spark: SparkSession) -> Path | None:
    """Add the package archive to a session whose executors are not the driver's own threads (a cluster)."""
    if spark.sparkContext.master.startswith("local"):
        return None
    archive = build_archive()
    if archive is not None:
        spark.sparkContext.addArchive(f"{archive}#{ARCHIVE_NAME}")
        log.info("shipped %s to the executors as %s/", archive, ARCHIVE_NAME)
    return archive
