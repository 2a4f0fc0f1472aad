"""The live panel: what a user watching a capture sees, including the dissector's progress with --dissect."""

from __future__ import annotations

from kafkatap.capture.status import Snapshot, rows


def test_panel_shows_kafka_messages_only_while_dissecting() -> None:
    plain = dict(rows(Snapshot("dumpcap", "lo", "tcp and (port 9092)", packets=10, bytes_written=2000)))
    assert "kafka messages" not in plain and plain["packets"] == "10"
    live = dict(rows(Snapshot("dumpcap", "lo", "tcp and (port 9092)", messages=12345, dissected=1_500_000)))
    assert live["kafka messages"] == "12,345" and live["dissected"] == "1.5 MB"
