"""The generic extractor: fields by name wherever they are, errors in wire order, JSON identical to to_json."""

from __future__ import annotations

import copy

from kafkatap.dissect.kafka.extract import (FLOAT_FIELDS, REQUEST_FIELDS, RESPONSE_FIELDS, dumps, error_code, top_level,
                                            walk)
from kafkatap.dissect.protocol import registry, to_json
from kafkatap.dissect.protocol.generated import APIS


def test_dumps_after_walk_is_to_json() -> None:
    message = {
        "group_id": "g", "protocols": [{"name": "range", "metadata": b"\x00\x01abc"}],
        "weights": [1.5, 2.0], "ratio": float("nan"), "blobs": [b"x", b"yz"],
        "_unknown_tagged_fields": {7: b"\xff"}, "nested": {"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "name": "n"},
    }
    expected = to_json(copy.deepcopy(message))
    walk(message, REQUEST_FIELDS)
    assert dumps(message) == expected


def test_fields_are_found_anywhere_in_requests_and_at_the_top_of_responses() -> None:
    request = {"v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 7,
               "v3_and_below_topics": [{"name": "orders", "partitions": [0, 1]}]}
    found = walk(request, REQUEST_FIELDS)
    assert found.fields == {"transactional_id": "tx", "producer_id": 7}
    assert found.topics == ["orders"]
    response = {"throttle_time_ms": 3, "results_by_topic_v3_and_below": [
        {"name": "orders", "results_by_partition": [{"partition_index": 0, "partition_error_code": 0},
                                                    {"partition_index": 1, "partition_error_code": 90}]}]}
    rfound = walk(response, ())
    assert error_code(response, rfound) == 90
    assert top_level(response, RESPONSE_FIELDS) == {"throttle_time_ms": 3}


def test_error_code_prefers_the_top_level_one() -> None:
    response = {"error_code": 27, "topics": [{"name": "t", "partitions": [], "error_code": 3}]}
    assert error_code(response, walk(response, ())) == 27
    clean = {"error_code": 0, "topics": [{"name": "t", "partitions": [], "error_code": 0}]}
    assert error_code(clean, walk(clean, ())) == 0
    none = {"throttle_time_ms": 0}
    assert error_code(none, walk(none, ())) is None


def test_topic_ids_and_names_and_secrets() -> None:
    response = {"topics": [{"error_code": 0, "name": "orders", "topic_id": "Aa", "partitions": []},
                           {"error_code": 0, "name": None, "topic_id": "Bb", "partitions": []}],
                "auth_bytes": b"secret", "records": b"\x00" * 10}
    found = walk(response, ())
    assert found.topics == ["orders"] and found.topic_ids == ["Aa", "Bb"] and found.id_names == [("Aa", "orders")]
    assert response["auth_bytes"] == {"$redacted": 6} and response["records"] == {"$records": 10}
    assert "secret" not in dumps(response)


def test_float_fields_are_the_schemas_and_a_shape_of_the_same_keys_with_a_string_is_no_float() -> None:
    """DescribeClientQuotas' {key, value: float64} and a streams group member's client tag {key, value: string} share
    their keys, and the walk plans a struct by its keys: whichever came first once decided for both (a string's
    `value` then crashed the float check; a NaN after a string went to the JSON as NaN)."""
    floats = set()

    def collect(fields) -> None:
        for f in fields:
            if f.type.removeprefix("[]") == "float64":
                floats.add(f.name)
            collect(f.fields)

    for api_key in APIS:
        for response in (False, True):
            collect(registry.message(api_key, response).fields)
    assert floats == FLOAT_FIELDS
    for order in ((1.5, "rack-a", float("nan")), ("rack-a", float("inf"), 2.0)):
        for value in order:
            message = {"entries": [{"key": "k", "value": value}]}
            expected = to_json(copy.deepcopy(message))
            walk(message, ())
            assert dumps(message) == expected
