"""A Kafka connection's small state classes have one source each, compiled: pairing.py (InFlight), orphans.py
(Orphans), sasl.py (SaslTokens) and skips.py (Skips) run as plain Python where the compiled core is not built and as
their compiled build where it is (Cython's pure-Python mode, a .pxd of the same name: their fields C struct members the
compiled sink and exchange read). The two builds must behave alike; the compiled state twin holds them in typed
fields."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkatap.dissect import native
from kafkatap.dissect.kafka import orphans, pairing, sasl, skips
from kafkatap.dissect.kafka.account import Account
from kafkatap.dissect.kafka.plausible import RequestSync, ResponseSync
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.streams.reassembly import Where
from tests.support.paths import ROOT
from tests.support.sources import source_module

KAFKA = ROOT / "dissect" / "kafka"


def _requests(module) -> list:
    """InFlight over reused correlation ids, a response skipping older requests, and the oldest ones asked for."""
    inflight = module.InFlight()
    seen = []
    for seq, correlation_id in enumerate([5, 6, 7, 6, 8, 9]):
        seen.append(inflight.add(correlation_id, SimpleNamespace(seq=seq, api_key=3, api_version=seq)))
    seen.append(inflight.oldest(3))
    request, skipped = inflight.take(8)
    seen.append((request.seq, [r.seq for r in skipped], len(inflight), inflight.take(99)))
    seen.append([r.seq for r in inflight.drain()])
    return [[getattr(r, "seq", r) for r in s] if isinstance(s, list) else s for s in seen]


def _responses(module) -> list:
    """Orphans held past their count and byte bounds, taken and drained."""
    held = module.Orphans()
    seen = [held.hold(c, (Where("f.pcap", c, c), c, bytes(c % 7))) for c in range(module.MAX_ORPHANS + 3)]
    seen.append(held.hold(10, (Where("f.pcap", 1, 1), 0, b"again")))
    seen += [held.take(11), held.take(999), held.nbytes, len(held.drain()), held.nbytes]
    return seen


def _tokens(module) -> list:
    req_sync, resp_sync = RequestSync(), ResponseSync(dict)
    tokens = module.SaslTokens(req_sync, resp_sync)
    seen = [tokens.expected]
    tokens.after_request(ApiKey.SASL_HANDSHAKE, 1)
    seen.append((tokens.expected, req_sync.min_size))
    tokens.after_request(ApiKey.SASL_HANDSHAKE, 0)
    seen.append((tokens.expected, resp_sync.raw_tokens, req_sync.min_size, resp_sync.min_size))
    seen.append(tokens.is_token(b"\x01\x02 a raw token"))
    seen.append(tokens.is_token(b"\x00\x03\x00\x0c\x00\x00\x00\x01\xff\xff\x00"))  # an ApiVersions v12 request
    seen.append((tokens.expected, req_sync.min_size, resp_sync.min_size))
    return seen


def _skips(module) -> list:
    """Runs of skipped bytes coalesced, a bad length reported at once, the run flushed."""
    reported = []
    out = SimpleNamespace(anomaly=lambda *args: reported.append(args))
    account = Account()
    skip = module.Skips(out, "c1", account, 1)
    where = Where("f.pcap", 1, 1)
    skip.on_skip("resync", 10, 0, where)
    skip.on_skip("resync", 5, 10, where)
    skip.on_skip("trailing_bytes", 3, 20, where)
    skip.on_skip("bad_length", 0, 23, where)
    skip.on_skip("resync", 4, 30, where)
    run = skip.run
    skip.flush()
    return [reported, run, skip.run, account.total("resync"), account.total("trailing_bytes")]


@pytest.mark.parametrize(("name", "module", "script"), [("pairing", pairing, _requests),
                                                          ("orphans", orphans, _responses),
                                                          ("sasl", sasl, _tokens), ("skips", skips, _skips)])
def test_the_source_and_the_installed_build_behave_alike(name: str, module, script) -> None:
    assert script(module) == script(source_module(KAFKA / f"{name}.py"))


@pytest.mark.skipif(not native.compiled, reason="the compiled core is not running")
def test_the_installed_builds_are_compiled_and_typed_in_the_state_twin() -> None:
    from kafkatap.dissect.kafka.state import ConnState

    for module in (pairing, orphans, sasl, skips):
        assert module.__file__.endswith(".so"), module
    st = ConnState()
    for field in ("inflight", "orphans", "sasl"):
        with pytest.raises(TypeError):  # a C field of its class: nothing else fits
            setattr(st, field, SimpleNamespace())
