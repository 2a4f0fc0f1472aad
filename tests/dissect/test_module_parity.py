"""Each compiled module against its own twin. The dissector runs with that one module on its pure-Python side and
everything else compiled, and must give the same tables and summary as with the module compiled, over every sample
and every fault capture of test_parity.py. A difference here names the module; the whole-path parity tests
(test_parity.py, packets/test_compiled.py) can only name the run.

The seams are the ones a run picks its twin at (`native.pick` reads each module's `_compiled` when a run builds its
Driver, Sink and Rows). The compiled sink calls the compiled exchange in C, so the exchange is compared under the
pure sink, which calls whatever exchange it is given: there, `CompiledExchange` hands each frame to _exchange.pyx,
as the compiled sink does. The records/ table is not asked for, so the compiled row builders take every message
they can (with it, they hand the record data to the pure functions)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkatap.dissect import native
from kafkatap.dissect.kafka import sink
from kafkatap.dissect.kafka.exchange import Exchange
from kafkatap.dissect.kafka.topics import TopicNames
from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.streams import driver
from kafkatap.dissect.tables import rows
from tests.dissect.test_parity import faults, tables
from tests.support.paths import SAMPLES
from tests.support.pcap import pcap_bytes, timed
from tests.support.replay import Replay

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(native.missing()), reason="the compiled core is not built (pure-Python run)")]


class CompiledExchange:
    """An exchange whose frames go through _exchange.pyx, as the compiled sink sends them (which hands the unusual
    ones back to the Exchange's own methods)."""

    def __init__(self, exchange: Exchange) -> None:
        from kafkatap.dissect.kafka import _exchange  # noqa: PLC0415 - only where the core is built
        self.request = lambda *frame: _exchange.request(exchange, *frame)
        self.response = lambda *frame: _exchange.response(exchange, *frame)


def _compiled_exchange(mp: pytest.MonkeyPatch) -> None:
    feed = sink.feed
    mp.setattr(sink, "feed", lambda exchange, *args: feed(CompiledExchange(exchange), *args))


def _pure(*modules: object) -> Callable[[pytest.MonkeyPatch], None]:
    def patch(mp: pytest.MonkeyPatch) -> None:
        for module in modules:
            mp.setattr(module, "_compiled", None)
    return patch


RUNS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "compiled": lambda mp: None,
    "pure driver": _pure(driver),
    "pure rows": _pure(rows),
    "pure sink, compiled exchange": lambda mp: (_pure(sink)(mp), _compiled_exchange(mp)),
    "pure sink and exchange": _pure(sink),
}
SEAMS = {  # compiled module: (the run with it compiled, the run with its pure twin), all else the same
    "streams/_driver.pyx": ("compiled", "pure driver"),
    "tables/_rows.pyx": ("compiled", "pure rows"),
    "kafka/_sink.pyx": ("compiled", "pure sink, compiled exchange"),
    "kafka/_exchange.pyx": ("pure sink, compiled exchange", "pure sink and exchange"),
}


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, list[int]]]:
    """Every sample with its broker ports, and every fault capture."""
    folder = tmp_path_factory.mktemp("captures")
    out = []
    for truth_path in sorted(SAMPLES.glob("*.truth.json")):
        truth = json.loads(truth_path.read_text())
        out.append((SAMPLES / truth["capture"], truth["broker_ports"]))
    replay = Replay("produce_consume")
    for name, frames in faults(replay).items():
        path = folder / f"{name}.pcap"
        path.write_bytes(pcap_bytes(timed(frames)))
        out.append((path, [replay.port]))
    return out


_RESULTS: dict[str, dict[str, tuple[dict, dict]]] = {}


def _results(run: str, captures: list[tuple[Path, list[int]]], folder: Path) -> dict[str, tuple[dict, dict]]:
    """Each capture's tables and summary from `run` (computed once per module: runs are shared between seams)."""
    if run not in _RESULTS:
        with pytest.MonkeyPatch.context() as mp:
            RUNS[run](mp)
            results = {}
            for capture, ports in captures:
                out = folder / run.replace(" ", "_").replace(",", "") / capture.stem
                dissect_captures([str(capture)], str(out), ports=ports)
                results[capture.name] = tables(out)
        _RESULTS[run] = results
    return _RESULTS[run]


@pytest.mark.parametrize("module", SEAMS)
def test_each_compiled_module_gives_what_its_twin_gives(module: str, captures: list[tuple[Path, list[int]]],
                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.getbasetemp() / "module_parity"
    compiled, pure = (_results(run, captures, folder) for run in SEAMS[module])
    assert compiled.keys() == pure.keys()
    for capture, ((ours, our_summary), (theirs, their_summary)) in zip(compiled, zip(compiled.values(),
                                                                                      pure.values())):
        assert our_summary == their_summary, (module, capture)
        assert ours.keys() == theirs.keys(), (module, capture)
        for table in ours:
            assert ours[table].equals(theirs[table], check_metadata=True), (module, capture, table)


def test_each_run_really_swaps_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs differ where they say: the pure run of a module binds the pure function, the others the compiled one
    (a seam bound at import instead of per run would make this test compare a module with itself)."""
    from kafkatap.dissect.kafka import _sink  # noqa: PLC0415 - only where the core is built
    from kafkatap.dissect.streams import _driver  # noqa: PLC0415
    from kafkatap.dissect.tables import _rows  # noqa: PLC0415

    def bound(run: str) -> tuple[object, object, object]:
        with pytest.MonkeyPatch.context() as mp:
            RUNS[run](mp)
            return (native.pick(driver.deliver, driver._compiled), native.pick(rows.frame, rows._compiled),
                    native.pick(sink.on_data, sink._compiled))

    assert bound("compiled") == (_driver.deliver, _rows.frame, _sink.on_data)
    assert bound("pure driver") == (driver.deliver, _rows.frame, _sink.on_data)
    assert bound("pure rows") == (_driver.deliver, rows.frame, _sink.on_data)
    assert bound("pure sink and exchange") == (_driver.deliver, _rows.frame, sink.on_data)


def test_the_compiled_callers_call_what_the_run_picked() -> None:
    """The compiled exchange calls a Rows' compiled methods in C (kafka/_messages.pxd), and the compiled driver a
    Sink's compiled on_data (streams/_stream_sink.pxd), only when the run picked them: the classes' compiled bases are
    bound at import, so without the flags the pure rows and pure sink runs would still run the compiled ones from
    there."""
    def in_c(run: str) -> tuple[bool, bool]:
        with pytest.MonkeyPatch.context() as mp:
            RUNS[run](mp)
            tables = dict.fromkeys(("frames", "batches", "share", "anomalies", "connections", "records"))
            made = rows.Rows(tables, TopicNames(), records=False, payloads=False)
            return made.compiled, sink.Sink(made, TopicNames(), {9092}).compiled

    assert in_c("compiled") == in_c("pure driver") == (True, True)
    assert in_c("pure rows") == (False, True)
    assert in_c("pure sink and exchange") == (True, False)
