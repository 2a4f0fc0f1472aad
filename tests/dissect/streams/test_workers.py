"""A `--workers N` run splits connections by a hash of their endpoints: the scalar and the vectorised forms agree,
either direction of a connection has the same owner, and each worker's reassembler meets only its own connections."""

from __future__ import annotations

import random

import numpy as np

from kafkatap.dissect.streams.driver import run_streams
from kafkatap.dissect.streams.workers import owner, owners
from tests.support.paths import SAMPLES
from tests.support.pcap import RecordingSink


def test_both_forms_agree_and_either_direction_has_one_owner() -> None:
    rnd = random.Random(9)
    keys = []
    for _ in range(2000):
        v6 = rnd.random() < 0.3
        hi = [rnd.randrange(-(1 << 63), 1 << 63) if v6 else 0xFFFF for _ in range(2)]
        lo = [rnd.randrange(-(1 << 63), 1 << 63) if v6 else rnd.randrange(1 << 32) for _ in range(2)]
        sport, dport = rnd.randrange(1 << 16), rnd.choice((9092, 19092, rnd.randrange(1 << 16)))
        keys.append((hi[0], lo[0], hi[1], lo[1], sport << 16 | dport))
    for parts in (2, 3, 4):
        cols = [np.array(col, np.int64) for col in zip(*keys)]
        assert owners(*cols, parts).tolist() == [owner(k, parts) for k in keys]
        for shi, slo, dhi, dlo, ports in keys:
            back = (dhi, dlo, shi, slo, (ports & 0xFFFF) << 16 | ports >> 16)
            assert owner((shi, slo, dhi, dlo, ports), parts) == owner(back, parts)
        shares = np.bincount(owners(*cols, parts), minlength=parts)
        assert shares.min() > len(keys) / parts * 0.8, shares


def test_each_worker_reassembles_only_its_connections() -> None:
    capture = str(SAMPLES / "day_in_the_life.pcapng")
    whole = RecordingSink()
    run_streams([capture], whole)
    seen = []
    for part in range(2):
        sink = RecordingSink()
        run_streams([capture], sink, part=(part, 2))
        assert {owner(c.conn_key, 2) for c in sink.conns} <= {part}
        seen += [c.conn_key for c in sink.conns]
    assert sorted(seen) == sorted(c.conn_key for c in whole.conns) and len(seen) > 20
