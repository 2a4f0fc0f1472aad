"""The bundled TLS samples (samples/tls/: a capture, its truth and the clients' key log): dissected with their key log
they show exactly the requests the clients logged sending and the records they produced and consumed, the requests
tshark decrypts with the same key log, a balanced byte account, and no secret in any output; without it, TLS counted."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from kafkatap.samples import capture_path, keylog_path, load_truth, tls_available
from tests.support.tls import assert_no_secrets, tshark_requests

SAMPLES = tls_available()
VERSION = {"TLSv1_3": "TLS 1.3", "TLSv1_2": "TLS 1.2"}
PASSWORDS = ("pa55-inside-tls",)  # samples/workloads/tls12_sasl.py's user


def dissect(name: str, out: Path, keylog: bool = True) -> dict:
    truth = load_truth(name)
    return dissect_captures([str(capture_path(name))], str(out), ports=truth["broker_ports"], records=True,
                            payloads=True, tls_keylog=[str(keylog_path(name))] if keylog else [])


def table(out: Path, name: str) -> list[dict]:
    return pq.read_table(out / name).to_pylist()


def test_the_tls_samples_are_bundled() -> None:
    assert SAMPLES == ["tls12_sasl", "tls13"]
    for name in SAMPLES:
        assert capture_path(name).exists() and keylog_path(name).exists()


@pytest.mark.parametrize("name", SAMPLES)
def test_decrypted_sample_is_what_its_clients_did(name: str, tmp_path: Path) -> None:
    truth = load_truth(name)
    out = tmp_path / "out"
    summary = dissect(name, out)
    frames = table(out, "frames")
    by_client = Counter((f["client_id"], f["api_name"]) for f in frames)
    assert {c: dict(sorted((a, n) for (cc, a), n in by_client.items() if cc == c)) for c, _ in by_client} == \
        truth["requests"]["by_client"]
    assert {f["tls"] for f in frames} == {VERSION[truth["tls"]["maximum_version"]]}
    assert {f["status"] for f in frames} == {"ok"}
    assert ("SaslAuthenticate" in {f["api_name"] for f in frames}) == bool(truth["tls"]["sasl_users"])

    produced = sorted((b["partition"], b["assigned_offset"], b["record_count"]) for b in table(out, "batches")
                      if b["direction"] == "produce")
    want = sorted((p["partition"], p["first_offset"], p["records"]) for p in truth["produced"])
    assert [(p, o) for p, o, _ in produced] == [(p, o) for p, o, _ in want]
    assert sum(n for *_, n in produced) == sum(n for *_, n in want)
    fetched = {(r["partition"], r["offset"]) for r in table(out, "records") if r["direction"] == "fetch"}
    consumed = {(c["partition"], o) for c in truth["consumed"] for lo, hi in c["offsets"] for o in range(lo, hi + 1)}
    assert consumed <= fetched

    account = summary["byte_account"]
    assert account["balanced"] and summary["anomalies_by_kind"] == {}
    assert set(account["totals"]["skipped"]) == {"tls_overhead"}
    assert summary["tls"]["connections"]["decrypted"] == summary["connections"]["tls"] > 0
    assert assert_no_secrets(out, keylog_path(name), PASSWORDS) > 0


@pytest.mark.parametrize("name", SAMPLES)
def test_without_its_key_log_the_tls_is_counted(name: str, tmp_path: Path) -> None:
    summary = dissect(name, tmp_path / "out", keylog=False)
    assert summary["rows"]["frames"] == 0 and summary["byte_account"]["balanced"]
    assert {a["kind"] for a in table(tmp_path / "out", "anomalies")} == {"tls"}
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["tls"]["connections"]["not_decrypted"] > 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize("name", SAMPLES)
def test_same_requests_as_tshark_with_the_key_log(name: str, tmp_path: Path) -> None:
    truth = load_truth(name)
    dissect(name, tmp_path / "out")
    ours = {(int(f["client_addr"].rsplit(":", 1)[1]), f["api_key"], f["api_version"], f["correlation_id"])
            for f in table(tmp_path / "out", "frames")}
    theirs = tshark_requests(capture_path(name), truth["tls"]["terminator_port"], keylog_path(name))
    assert theirs and ours == theirs
