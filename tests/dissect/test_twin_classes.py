"""The compiled twins of the dissector's per-connection and per-message classes (reassembly.Conn and _Half,
state.Request, Response and ConnState, extract.Found, account.Account, and the compiled bases of framing.Framer,
rows.Rows (and its own, messages.Messages' compiled twin), writer.TableWriter, sink.Sink (and its own,
reassembly.StreamSink's compiled twin), exchange.Exchange and the reassembler) are the pure-Python classes with
C-level fields: the same fields, the same values after construction, and the same behaviour seen from Python (which
the rare paths, written once in Python, rely on)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kafkatap.dissect import native
from kafkatap.dissect.records import split_batches
from kafkatap.samples.synthetic import record_batch

pytestmark = pytest.mark.skipif(not native.compiled, reason="the compiled core is not running")

_BATCH = split_batches(record_batch(0, [(b"k", b"v")], 1_700_000_000_000))[0][0]

FIELDS = """
import json
from kafkatap.dissect.kafka.account import Account
from kafkatap.dissect.kafka.extract import Found
from kafkatap.dissect.kafka.framing import Framer
from kafkatap.dissect.kafka.plausible import RequestSync
from kafkatap.dissect.kafka.state import ConnState, Request, Response
from kafkatap.dissect.streams.reassembly import Conn, Where

def fields(obj, names):
    return {name: repr(getattr(obj, name)) for name in names}

conn = Conn((1, 2, 3, 4, 5), (("10.0.0.1", 5000), ("10.0.0.2", 9092)), True, 1700000000000000)
st = ConnState()
account = Account()
account.seen(0, 10)
account.decoded(0, 6)
account.skipped(0, "resync", 3)
account.skipped(0, "trailing_bytes", 1)
account.skipped(0, "resync", 2)
account.lost(1, 7)
account.skipped(1, "tls", 5)
framer = Framer(RequestSync(), print, anchored=True)
print(json.dumps({
    "Conn": fields(conn, ("conn_key", "addr", "syn_seen", "first_ts_us", "state", "opened", "closed", "ignored",
                          "last_ts_us", "retransmissions", "out_of_order", "resets", "zero_windows", "syn_ts_us",
                          "handshake_rtt_us")) | {"repr": repr(conn), "halves": len(conn.halves)},
    "Half": fields(conn.halves[0], ("base", "isn", "pos", "starts", "pending", "pending_bytes", "fin_pos", "tail",
                                    "strays", "front", "front_ts")),
    "Request": fields(Request(7, Where("f.pcap", 3, 1700000000000001), 120, 0, 9, 42), ("seq", "ts", "capture_file",
                      "packet", "size", "api_key", "api_version", "correlation_id", "client_id", "body", "error",
                      "known", "produce")),
    "Response": fields(Response(Where("f.pcap", 4, 1700000000000002), 80), ("ts", "capture_file", "packet", "size",
                       "body", "error")),
    "ConnState": fields(st, ("conn_id", "client_addr", "broker_addr", "client_side", "kind", "framers", "skips",
                             "seq", "probe", "probe_bytes", "tls", "tls_version"))
                 | {name: type(getattr(st, name)).__name__ for name in ("req_sync", "resp_sync", "inflight",
                                                                         "orphans", "sasl", "account")},
    "Found": fields(Found(), ("fields", "topics", "topic_ids", "id_names", "first_error", "has_error")),
    "Account": {"balances": [account.balance(0), account.balance(1)], "tls": account.total("tls"),
                "resync": account.total("resync")},
    "Framer": fields(framer, ("buf", "buf_at", "marks", "offset", "synced", "anchored", "skip", "skip_reason", "need"))
              | {"frames": repr(framer.feed(b"\\0\\0\\0\\x0c" + bytes(12), Where("f.pcap", 5, 5)))},
}))
"""


def constructed(pure: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != native.ENV}
    if pure:
        env[native.ENV] = "1"
    out = subprocess.run([sys.executable, "-c", FIELDS], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_twins_are_constructed_like_the_pure_classes() -> None:
    assert constructed(pure=False) == constructed(pure=True)


def test_twins_are_the_classes_the_dissector_uses() -> None:
    from kafkatap.dissect.kafka import account, exchange, extract, framing, sink, state
    from kafkatap.dissect.streams import reassembly
    from kafkatap.dissect.tables import rows, writer

    for cls in (reassembly.Conn, reassembly._Half, state.Request, state.Response, state.ConnState, extract.Found,
                account.Account, framing.Framer.__base__, rows.Rows.__base__, writer.TableWriter.__base__,
                reassembly._Ordering.__base__, sink.Sink.__base__, exchange.Exchange.__base__,
                rows.Rows.__base__.__base__, sink.Sink.__base__.__base__):
        assert cls.__module__.split(".")[-1].startswith("_"), cls


def test_fields_behave_as_python_attributes() -> None:
    from kafkatap.dissect.kafka.state import Request
    from kafkatap.dissect.streams.reassembly import Where

    req = Request(1, Where("f.pcap", 1, 2), 3, 0, 9, 42)
    req.known = False
    req.produce = [("t", None, 0, [])]
    req.error = "decode_error"
    assert (req.known, req.produce, req.error) == (False, [("t", None, 0, [])], "decode_error")
    with pytest.raises(AttributeError):
        req.not_a_field = 1  # no __dict__, as with the pure classes' __slots__
    with pytest.raises(TypeError):
        req.api_key = None  # an int16 on the wire: the twin keeps it as a C int
    with pytest.raises(TypeError):
        req.packet = None  # the packet number: a C int64 beside the timestamp


def test_compiled_functions_called_in_c_refuse_none_from_python() -> None:
    """The compiled functions other compiled modules call in C (cpdef) are also callable from Python, where nothing
    stops a None: they raise TypeError instead of letting C read through it."""
    from kafkatap.dissect.kafka import _exchange
    from kafkatap.dissect.tables import _columns, batch_row

    calls = [lambda: _exchange.request(None, None, 0, 0, b"", None),
             lambda: _exchange.response(None, None, 0, 0, b"", None),
             lambda: _columns.add(None, ()), lambda: _columns.extend(None, []),
             lambda: batch_row.batch_rows(None, [_BATCH], (), None),
             lambda: batch_row.batch_rows((), None, (), None), lambda: batch_row.batch_rows((), [_BATCH], None, None),
             lambda: batch_row.batch_rows((), [None], (), None), lambda: batch_row.batch_rows((), [object()], (), None),
             lambda: batch_row.batch_rows((), [_BATCH], (), None, 5)]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    with pytest.raises(IndexError):  # fewer fingerprints than batches: checked, never read past the list
        batch_row.batch_rows((), [_BATCH], (), None, [])
