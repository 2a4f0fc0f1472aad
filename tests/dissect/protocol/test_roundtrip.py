"""Property round-trips for every api key, version and direction, plus compiled-vs-interpreter agreement.

Values are drawn from the generated table itself (every field of the version, tagged fields sometimes, unknown
tagged fields sometimes), encoded, decoded by the compiled decoder and by the table interpreter, and re-encoded.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import api_name, api_versions, decode_request, decode_response, encode_request, encode_response
from kafkatap.dissect.protocol import interpret
from tests.support.strategies import message

CASES = [(key, v, response) for key in range(95) for v in api_versions(key) for response in (False, True)]


def case_id(case: tuple[int, int, bool]) -> str:
    key, v, response = case
    return f"{api_name(key)}-v{v}-{'response' if response else 'request'}"


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_round_trip(case: tuple[int, int, bool], data: st.DataObject) -> None:
    key, version, response = case
    obj = data.draw(message(key, version, response))
    encode, decode = (encode_response, decode_response) if response else (encode_request, decode_request)
    raw = encode(key, version, obj)
    decoded, end = decode(key, version, raw)
    assert end == len(raw)
    assert decoded == obj
    assert interpret.decode(key, version, response, raw) == (decoded, end)
    assert encode(key, version, decoded) == raw
    # a trailing byte is left for the caller to judge, never swallowed
    assert decode(key, version, raw + b"\x00")[1] == len(raw)


def test_every_api_key_has_versions() -> None:
    assert all(api_versions(key) for key in range(95))
    assert len(CASES) == 2 * sum(len(api_versions(key)) for key in range(95))


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in (0, 1, 3, 8, 12, 18, 68)],
                         ids=[case_id(c) for c in CASES if c[0] in (0, 1, 3, 8, 12, 18, 68)])
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_mutations_agree_with_interpreter(case: tuple[int, int, bool], data: st.DataObject) -> None:
    """Corrupted bytes: both decoders either return the same result or raise DecodeError with the same reason."""
    key, version, response = case
    obj = data.draw(message(key, version, response))
    raw = bytearray((encode_response if response else encode_request)(key, version, obj))
    if raw:
        for _ in range(data.draw(st.integers(1, 3))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    blob = bytes(raw[:cut])
    decode = decode_response if response else decode_request
    try:
        compiled = decode(key, version, blob)
    except DecodeError as exc:
        with pytest.raises(DecodeError) as info:
            interpret.decode(key, version, response, blob)
        assert info.value.reason == exc.reason
        assert 0 <= exc.offset <= len(blob)
    else:
        assert interpret.decode(key, version, response, blob) == compiled
