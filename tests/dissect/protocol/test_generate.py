"""The committed tables are exactly what the generator makes from the shared Kafka schemas."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from kafkatap.dissect.protocol import generate

GENERATED = Path(generate.__file__).parent / "generated"


@pytest.mark.skipif(not (generate.DEFAULT_SOURCE / "message").is_dir(),
                    reason=f"Kafka schemas not found at {generate.DEFAULT_SOURCE} (../shared/kafka-protocol)")
def test_regenerated_tables_match_committed(tmp_path: Path) -> None:
    written = generate.generate(generate.DEFAULT_SOURCE, tmp_path)
    names = sorted(p.name for p in written)
    assert names == sorted(p.name for p in GENERATED.glob("*.py"))
    different = [name for name in names if not filecmp.cmp(tmp_path / name, GENERATED / name, shallow=False)]
    assert not different, f"stale generated tables (run python -m kafkatap.dissect.protocol.generate): {different}"


def test_generated_modules_are_stamped() -> None:
    for path in GENERATED.glob("*.py"):
        text = path.read_text()
        assert "do not edit" in text and generate.TRUNK_COMMIT in text and generate.LEGACY_COMMIT in text, path


@pytest.mark.parametrize("name, expected", [
    ("ThrottleTimeMs", "throttle_time_ms"), ("TopicId", "topic_id"), ("ProducerId", "producer_id"),
    ("KRaftVersion", "k_raft_version"), ("V3AndBelowProducerId", "v3_and_below_producer_id"),
    ("validateOnly", "validate_only"), ("isKRaftController", "is_k_raft_controller"), ("V0Port", "v0_port"),
])
def test_snake_case(name: str, expected: str) -> None:
    assert generate.snake(name) == expected


def test_version_specs_round_trip() -> None:
    assert generate.vspec(frozenset({0, 1, 2, 5, 6}), 6) == "0-2,5+"
    assert generate.vspec(frozenset({3}), 9) == "3"
    assert generate.vspec(frozenset(), 9) == "none"
    assert generate.vset("0-2,5+", 6) == frozenset({0, 1, 2, 5, 6})
