"""Dissecting many captures on Spark executors: capture sets, one task each, Parquet parts moved to OUT.

Files move through pyarrow.fs, so OUT and the captures may be local paths, file://, s3:// (or Hadoop's s3a://),
hdfs:// or gs:// URIs; each task works in its own temp dir and uploads its parts under a name that includes the
capture set's index, so tasks never collide and a re-run overwrites cleanly.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import shutil
import tempfile
from urllib.parse import urlparse

import pyarrow.fs as pafs

TABLES = ("frames", "batches", "records", "share", "anomalies")
_ROTATION = re.compile(r"^(?P<stem>.*?)(?P<n>\d*)$")


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


def list_captures(pattern: str) -> list[str]:
    """Files matching a pattern whose last component may hold wildcards (`s3://b/caps/*.pcapng`)."""
    fs, path = _fs_path(pattern)
    directory, name = posixpath.split(path)
    infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    return sorted(_uri(pattern, i.path) for i in infos
                  if i.type == pafs.FileType.File and fnmatch.fnmatch(posixpath.basename(i.path), name))


def capture_sets(files: list[str], one_per_file: bool = False) -> list[list[str]]:
    """Group rotated files of one capture (`cap.pcapng`, `cap.pcapng1`, `cap.pcapng2`, as `kafkatap capture` and
    tcpdump -C name them; or `cap-00001.pcapng`) into one set, in rotation order: a connection that spans a rotation
    must be dissected in one piece."""
    if one_per_file:
        return [[f] for f in files]
    sets: dict[str, list[tuple[int, str]]] = {}
    for f in files:
        directory, name = posixpath.split(f)
        match = re.match(r"^(?P<stem>.*?)[-_.]?(?P<n>\d+)(?P<ext>\.(?:pcapng|pcap|cap))$", name)
        if match:
            key, n = match["stem"] + match["ext"], int(match["n"])
        else:
            m = _ROTATION.match(name)
            key, n = m["stem"], int(m["n"] or 0)
        sets.setdefault(posixpath.join(directory, key), []).append((n, f))
    return [[f for _, f in sorted(members)] for _, members in sorted(sets.items())]


def _fetch(uri: str, into: str) -> str:
    """A local path for the capture (copied from remote storage when needed)."""
    fs, path = _fs_path(uri)
    if isinstance(fs, pafs.LocalFileSystem):
        return path
    local = os.path.join(into, posixpath.basename(path))
    with fs.open_input_stream(path) as src, open(local, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return local


def dissect_set(index: int, files: list[str], out: str, ports: list[int], records: bool, payloads: bool) -> dict:
    """One executor task: dissect a capture set locally, upload its parts to OUT/<table>/part-<index>-*.parquet."""
    from kafkatap.dissect.run import dissect_captures

    work = tempfile.mkdtemp(prefix="kafkatap-dissect-")
    try:
        local = [_fetch(f, work) for f in files]
        local_out = os.path.join(work, "out")
        result = dissect_captures(local, local_out, ports=ports, records=records, payloads=payloads)
        fs, root = _fs_path(out)
        for table in TABLES:
            src_dir = os.path.join(local_out, table)
            if not os.path.isdir(src_dir):
                continue
            fs.create_dir(posixpath.join(root, table), recursive=True)
            for name in sorted(os.listdir(src_dir)):
                if name.endswith(".parquet"):
                    target = posixpath.join(root, table, f"part-{index:05d}-{name.removeprefix('part-')}")
                    with open(os.path.join(src_dir, name), "rb") as src, fs.open_output_stream(target) as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
        result["files"] = list(files)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def clear_out(out: str, records: bool) -> None:
    """Remove the part files a previous run left (only those: OUT may hold other things)."""
    fs, root = _fs_path(out)
    for table in TABLES:
        infos = fs.get_file_info(pafs.FileSelector(posixpath.join(root, table), allow_not_found=True))
        for info in infos:
            if info.type == pafs.FileType.File and posixpath.basename(info.path).startswith("part-"):
                fs.delete_file(info.path)


def merge_summaries(parts: list[dict]) -> dict:
    """One summary.json for many capture sets: counts add up, spans widen (`first*` min, `last*` max), flags must
    all hold, lists concatenate; each set's own summary is kept under `capture_sets`."""
    def merge(a, b, key: str = ""):
        if isinstance(a, bool) and isinstance(b, bool):
            return a and b
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if key.startswith("first"):
                return min(a, b)
            if key.startswith("last"):
                return max(a, b)
            return a + b
        if isinstance(a, dict) and isinstance(b, dict):
            return {k: merge(a[k], b[k], k) if k in a and k in b else a.get(k, b.get(k)) for k in {**a, **b}}
        if isinstance(a, list) and isinstance(b, list):
            return a + b
        if isinstance(a, str) and isinstance(b, str) and key.startswith(("first", "last")):
            return min(a, b) if key.startswith("first") else max(a, b)
        return a if a == b else b if a is None else a

    merged: dict = {}
    for part in parts:
        merged = merge(merged, part) if merged else json.loads(json.dumps(part))
    merged["capture_sets"] = parts
    return merged


def write_summary(out: str, summary: dict) -> None:
    fs, root = _fs_path(out)
    fs.create_dir(root, recursive=True)
    with fs.open_output_stream(posixpath.join(root, "summary.json")) as f:
        f.write(json.dumps(summary, indent=1, default=str).encode())
