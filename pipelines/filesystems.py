"""Capture files and dissect outputs where Spark's executors find them: local paths, file://, s3:// (or Hadoop's
s3a://), hdfs:// or gs:// URIs, all through pyarrow.fs. A local OUT is staged and swapped in whole (as `kafkatap
dissect` does, dissect/tables/publish.py); a URI's earlier part files are removed and the new ones written in place.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

import pyarrow.fs as pafs

from kafkatap.dissect.run import conclude
from kafkatap.dissect.tables.schema import TABLES
from kafkatap.dissect.tables.topic_rewrite import TOPIC_COLUMNS
from kafkatap.dissect.tables.writer import part_name
from kafkatap.dissect.tls import KeyLog


def _fs_path(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow filesystem and path for a URI; Hadoop's `s3a://` is S3, and plain paths are local."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return pafs.LocalFileSystem(), os.path.abspath(parsed.path if parsed.scheme else uri)
    if parsed.scheme == "s3a":
        uri = "s3://" + uri[len("s3a://"):]
    return pafs.FileSystem.from_uri(uri)


def _uri(template: str, path: str) -> str:
    """Rebuild a URI with the scheme and authority of `template` around `path`."""
    parsed = urlparse(template)
    if parsed.scheme in ("", "file"):
        return path
    return f"{parsed.scheme}://{parsed.netloc}/{path.lstrip('/')}" if parsed.netloc else f"{parsed.scheme}://{path}"


def is_local(uri: str) -> bool:
    return urlparse(uri).scheme in ("", "file")


def local_path(uri: str) -> str:
    return _fs_path(uri)[1]


def list_captures(pattern: str) -> list[str]:
    """Files matching a pattern whose last component may hold wildcards (`s3://b/caps/*.pcapng`)."""
    fs, path = _fs_path(pattern)
    directory, name = posixpath.split(path)
    infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    return sorted(_uri(pattern, i.path) for i in infos
                  if i.type == pafs.FileType.File and fnmatch.fnmatch(posixpath.basename(i.path), name))


@contextmanager
def open_input(uri: str) -> Iterator[BinaryIO]:
    """A capture file opened for random access (a plain file for local paths: the readers' fast path)."""
    if is_local(uri):
        with open(local_path(uri), "rb") as f:
            yield f
        return
    fs, path = _fs_path(uri)
    with fs.open_input_file(path) as f:
        yield f


def size_of(f: Any) -> int:
    return f.size() if hasattr(f, "size") else os.fstat(f.fileno()).st_size


def size_or_zero(uri: str) -> int:
    """The size of a file that could not be read as a capture (0 when it cannot be read at all)."""
    try:
        fs, path = _fs_path(uri)
        info = fs.get_file_info(path)
        return info.size if info.type == pafs.FileType.File else 0
    except (OSError, ValueError):
        return 0


def clear_out(out: str) -> None:
    """Remove the part files and summary a previous run left in a URI (only those: it may hold other things)."""
    fs, root = _fs_path(out)
    for table in TABLES:
        infos = fs.get_file_info(pafs.FileSelector(posixpath.join(root, table), allow_not_found=True))
        for info in infos:
            if info.type == pafs.FileType.File and posixpath.basename(info.path).startswith("part-"):
                fs.delete_file(info.path)
    if fs.get_file_info(posixpath.join(root, "summary.json")).type == pafs.FileType.File:
        fs.delete_file(posixpath.join(root, "summary.json"))


def upload_parts(local: str, out: str) -> None:
    """A task's tables (local/<table>/part-*.parquet) copied to out/<table>/."""
    fs, root = _fs_path(out)
    for table in os.listdir(local):
        fs.create_dir(posixpath.join(root, table), recursive=True)
        for name in sorted(os.listdir(os.path.join(local, table))):
            _copy(os.path.join(local, table, name), fs, posixpath.join(root, table, name))


def _copy(src: str, fs: pafs.FileSystem, target: str) -> None:
    with open(src, "rb") as f, fs.open_output_stream(target) as dst:
        shutil.copyfileobj(f, dst, 1 << 20)


def conclude_remote(out: str, files: list[str], parts: list[dict], keylogs: list[str], keylog: KeyLog | None,
                    extra: dict) -> dict:
    """run.conclude for parts written to a URI: the parts holding ids another part named are fetched, rewritten and
    put back, and summary.json is written beside them."""
    fs, root = _fs_path(out)
    names = {k: v for part in parts for k, v in part["names"].items()}
    mirror = Path(tempfile.mkdtemp(prefix="kafkatap-conclude-"))
    try:
        fetched = []
        for k, part in enumerate(parts):
            for table in TOPIC_COLUMNS:
                if any(i in names for i in part["unresolved"].get(table, ())):
                    name = posixpath.join(table, part_name(k))
                    (mirror / table).mkdir(exist_ok=True)
                    with fs.open_input_stream(posixpath.join(root, name)) as src, open(mirror / name, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                    fetched.append(name)
        result = conclude(mirror, files, parts, keylogs, keylog, **extra)
        for name in [*fetched, "summary.json"]:
            _copy(str(mirror / name), fs, posixpath.join(root, name))
        return result
    finally:
        shutil.rmtree(mirror, ignore_errors=True)

