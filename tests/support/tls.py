"""What every TLS test checks: the requests tshark decrypts with the same key log (the oracle), and that no secret of
the key log, nor a password carried inside the TLS, reaches any output of a dissect run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from kafkatap.dissect.tables.schema import TABLES


def tshark_requests(capture: Path, port: int, keylog: Path) -> set[tuple[int, int, int, int]]:
    """(client port, api_key, api_version, correlation_id) of each request tshark decrypts and decodes, through
    pyshark with the same key log (decode-as: TLS on the port, Kafka inside it)."""
    import pyshark

    packets = pyshark.FileCapture(str(capture), display_filter="kafka", keep_packets=False,
                                  decode_as={f"tcp.port=={port}": "tls", f"tls.port=={port}": "kafka"},
                                  override_prefs={"tls.keylog_file": str(keylog)})
    found = set()
    try:
        for packet in packets:
            for layer in packet.layers:
                if layer.layer_name == "kafka" and layer.get_field("request_frame") is None:  # a request
                    found.add((int(packet.tcp.srcport), int(layer.api_key), int(layer.api_version),
                               int(layer.correlation_id)))
    finally:
        packets.close()
    return found


def assert_no_secrets(out: Path, keylog: Path, passwords: tuple[str, ...] = ()) -> int:
    """Scan every output byte (the Parquet files raw and decoded, summary.json) for the key log's secrets, in hex and
    raw, and for the passwords; returns how many secrets were looked for."""
    text = (out / "summary.json").read_text()
    raw = b"".join(p.read_bytes() for p in out.glob("*/*.parquet"))
    for name in TABLES:
        if (out / name).exists():
            rows = pq.read_table(out / name).to_pylist()
            text += json.dumps(rows, default=repr)
            raw += b"".join(v for row in rows for v in row.values() if isinstance(v, bytes))
    secrets = [bytes.fromhex(line.split()[2]) for line in keylog.read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for secret in secrets:
        assert secret.hex() not in text.lower() and secret not in raw and secret.hex().encode() not in raw.lower()
    for password in passwords:
        assert password not in text and password.encode() not in raw
    return len(secrets)
