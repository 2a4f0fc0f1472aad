"""A capture of a few GB for the scaling benchmark, built from a chatty one: its connections copied onto new client
addresses, one copy after the other in time, until the file holds --size MB.

The chatty source is `tests/support/bulk.py`'s `chatty_pcap` (many small Fetch exchanges, each connection opened by
a handshake) unless --source names another capture (e.g. dissect_vs_tshark.py's recorded `chatty-source.pcap`); the
copying is dissect_vs_tshark.py's `replicate`. A capture already built for the same source and size is kept. Run
from the repository root:

    python -m benchmarks.scale_capture [--workdir /tmp/kt-scale] [--size 2000] [--source CAPTURE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.dissect_vs_tshark import replicate
from tests.support.bulk import chatty_pcap

PORT = 9092  # chatty_pcap's broker port, kept by the copies
SOURCE_CONNECTIONS, SOURCE_PAIRS = 32, 500


def build(workdir: Path, size_mb: float, source: Path | None = None) -> tuple[Path, dict]:
    """The scaled capture in workdir and its description (source, MB, packets), built unless already there."""
    workdir.mkdir(parents=True, exist_ok=True)
    if source is None:
        source = workdir / "chatty-source.pcap"
        if not source.exists():
            chatty_pcap(source, SOURCE_CONNECTIONS, SOURCE_PAIRS, PORT)
    capture, meta_path = workdir / f"scaled-{size_mb:g}mb.pcap", workdir / f"scaled-{size_mb:g}mb.json"
    meta = {"source": str(source), "mb": size_mb}
    if capture.exists() and meta_path.exists():
        known = json.loads(meta_path.read_text())
        if {k: known.get(k) for k in meta} == meta:
            return capture, known
    meta["packets"] = replicate(source, capture, size_mb, None)
    meta["bytes"] = capture.stat().st_size
    meta_path.write_text(json.dumps(meta))
    return capture, meta


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/kt-scale"))
    p.add_argument("--size", type=float, default=2000, help="MB of capture to write (default 2000)")
    p.add_argument("--source", type=Path, help="the capture whose connections are copied (default: chatty_pcap's)")
    args = p.parse_args()
    capture, meta = build(args.workdir, args.size, args.source)
    print(f"{capture}: {meta['bytes'] / 1e6:.0f} MB, {meta['packets']:,} packets (port {PORT})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
