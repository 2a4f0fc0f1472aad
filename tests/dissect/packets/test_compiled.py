"""The compiled packet layer (_frames.pyx, _packet_records.pyx) against its pure-Python reference: the same chunks
from the readers, the same verdicts and columns from frames.frames, and the same dissector output, on every sample, on
damaged copies of them, and on frames of every shape; native's switch picks the path in-process."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow.parquet as pq
import pytest

from kafkatap.dissect import native
from kafkatap.dissect.packets.files import open_capture
from kafkatap.dissect.packets.frames import VERDICTS, frames
from kafkatap.dissect.run import dissect_captures
from tests.support.frames import assert_same, damage, shapes
from tests.support.paths import SAMPLES
from tests.support.pcap import PcapngWriter, pcap_bytes

T = TypeVar("T")
CAPTURES = sorted(SAMPLES.glob("*.pcapng"))
UNSTABLE_SUMMARY = ("elapsed_s", "output")

pytestmark = pytest.mark.skipif(bool(native.missing()), reason="the compiled core is not built (pure-Python run)")


def both(monkeypatch: pytest.MonkeyPatch, run: Callable[[], T]) -> tuple[T, T]:
    """run() on the compiled path, then on the pure-Python one."""
    results = []
    for compiled in (True, False):
        monkeypatch.setattr(native, "compiled", compiled)
        results.append(run())
    return results[0], results[1]


def read(path: Path, chunk_size: int) -> tuple[list, list]:
    """Every chunk of a capture with its frames parsed, and the reader's anomalies."""
    reader = open_capture(str(path), chunk_size)
    try:
        chunks = [(c._replace(data=None), frames(c)) for c in reader.chunks()]
    finally:
        reader.close()
    return chunks, reader.anomalies


def as_pcap(capture: Path, endian: str = "<", nano: bool = False) -> bytes:
    """A sample's frames in a classic pcap file."""
    chunks, _ = read(capture, 1 << 30)
    packets = [(ts, c.buf[o:o + cap], wire) for c, _ in chunks
               for o, cap, wire, ts in zip(c.off.tolist(), c.caplen.tolist(), c.origlen.tolist(), c.ts_us.tolist())]
    return pcap_bytes(packets, endian=endian, nano=nano)


def shapes_pcapng(rnd: random.Random, copies: int) -> bytes:
    """Damaged frames of every shape, each on an interface of its link type, with a simple packet block, an
    obsolete packet block and a second section in the other byte order among them."""
    corpus = shapes()
    links = sorted({lt for lt, _ in corpus})
    w = PcapngWriter().shb()
    for lt in links:
        w.idb(lt)
    for n in range(copies):
        lt, frame = rnd.choice(corpus)
        cut, wire = damage(frame, rnd)
        w.epb(links.index(lt), 1_700_000_000_000_000 + n, cut, max(wire, len(cut)))
        if n % 97 == 0:
            w.spb(frame)
            w.opb(links.index(lt), 1_700_000_000_000_000 + n, frame)
    w.shb(">").idb(1).epb(0, 1_700_000_001_000_000, corpus[0][1])
    return w.bytes()


def damaged(data: bytes, rnd: random.Random, keep: int) -> bytes:
    """One random damage after the first `keep` bytes: flips, a truncation, or an absurd 32-bit length."""
    buf = bytearray(data)
    kind = rnd.randrange(3)
    at = rnd.randrange(keep, len(buf) - 4)
    if kind == 0:
        for _ in range(rnd.randrange(1, 20)):
            buf[rnd.randrange(keep, len(buf))] ^= 1 << rnd.randrange(8)
    elif kind == 1:
        del buf[at:]
    else:
        buf[at:at + 4] = struct.pack("<I", rnd.choice((0, 13, 0x7FFFFFFF, 0xFFFFFFF0, 64 << 20)))
    return bytes(buf)


def captures(tmp_path: Path) -> list[Path]:
    """The samples (two also as classic pcap: little-endian microseconds, big-endian nanoseconds), frames of every
    shape, seeded damaged copies of all of these, and a packet block too short for its fields."""
    rnd = random.Random(20261124)
    files = {p.name: p.read_bytes() for p in CAPTURES}
    files["produce_consume.pcap"] = as_pcap(SAMPLES / "produce_consume.pcapng")
    files["idempotent_be_nano.pcap"] = as_pcap(SAMPLES / "idempotent.pcapng", ">", nano=True)
    files["shapes.pcapng"] = shapes_pcapng(rnd, 3000)
    for name in sorted(files):
        for n in range(4):
            files[f"damaged{n}_{name}"] = damaged(files[name], rnd, 64)
    files["short_epb.pcapng"] = files["idempotent.pcapng"] + struct.pack("<III", 6, 12, 12)
    paths = []
    for name, data in files.items():
        paths.append(tmp_path / name)
        paths[-1].write_bytes(data)
    return paths


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return captures(tmp_path_factory.mktemp("captures"))


def test_the_compiled_core_is_the_default() -> None:
    assert native.compiled != native.pure_requested()


@pytest.mark.parametrize("chunk_size", [1 << 20, 4096])
def test_readers_and_frames_agree(corpus: list[Path], chunk_size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = set()
    for path in corpus:
        compiled, pure = both(monkeypatch, lambda: read(path, chunk_size))
        assert_same(compiled, pure, path.name)
        verdicts |= {int(v) for _, f in compiled[0] for v in np.unique(f.verdict)}
    assert verdicts == set(range(VERDICTS)), "the corpus no longer reaches every verdict"


def tables(out: Path) -> tuple[dict, dict]:
    summary = json.loads((out / "summary.json").read_text())
    return ({t.name: pq.read_table(t) for t in sorted(out.iterdir()) if t.is_dir()},
            {k: v for k, v in summary.items() if k not in UNSTABLE_SUMMARY})


@pytest.mark.slow
def test_dissector_output_is_the_same_on_both_paths(corpus: list[Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    picked = [p for p in corpus if not p.name.startswith("damaged")] + random.Random(7).sample(
        [p for p in corpus if p.name.startswith("damaged")], 12)
    for path in picked:
        runs = iter(("compiled", "pure"))

        def run() -> tuple[dict, dict]:
            out = tmp_path / path.name / next(runs)
            dissect_captures([str(path)], str(out), records=True, payloads=True)
            return tables(out)

        (compiled, compiled_summary), (pure, pure_summary) = both(monkeypatch, run)
        assert compiled_summary == pure_summary, path.name
        assert compiled.keys() == pure.keys()
        for name in compiled:
            assert compiled[name].equals(pure[name], check_metadata=True), (path.name, name)
