"""The compiled body reader (_bodies.pyx) against its reference, bodies.read_request / read_response: the same Body or
the same DecodeError for messages of every api key and version, for every frame of every sample, and for damaged
copies of all of them."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatap.dissect import native
from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.kafka import bodies, plans
from kafkatap.dissect.protocol import encode_request, encode_response, registry, response_header_version
from kafkatap.dissect.protocol.generated import APIS
from kafkatap.dissect.run import dissect_captures
from tests.support import strategies
from tests.support.paths import SAMPLES

compiled = native.extension("kafkatap.dissect.kafka._bodies")
pytestmark = pytest.mark.skipif(compiled is None, reason="the compiled core is not built (pure-Python run)")

VERSIONS = [(key, v) for key in sorted(APIS) for v in registry.api_versions(key) or ()]
FOUND = ("fields", "topics", "topic_ids", "id_names", "first_error", "has_error")


def outcome(read: Any, args: tuple) -> tuple:
    try:
        body = read(*args)
    except DecodeError as e:
        return "error", e.reason, e.offset, str(e)
    found = None if body.found is None else tuple(getattr(body.found, name) for name in FOUND)
    return "ok", body.end, body.message, body.json, found, body.top, body.rows


def assert_same(name: str, args: tuple) -> tuple:
    ours = outcome(getattr(compiled, name), args)
    assert ours == outcome(getattr(bodies, name), args), (name, args[:2], args[2][:64])
    return ours


def response_frame(api_key: int, version: int, body: bytes) -> bytes:
    return struct.pack(">i", 7) + (b"\x00" if response_header_version(api_key, version) == 1 else b"") + body


def damage(data: bytes, rnd: random.Random) -> bytes:
    """Bit flips, a cut, or an absurd length or count written somewhere."""
    buf = bytearray(data)
    if not buf:
        return bytes(rnd.randbytes(rnd.randrange(1, 8)))
    kind = rnd.randrange(4)
    if kind == 0:
        for _ in range(rnd.randrange(1, 4)):
            buf[rnd.randrange(len(buf))] ^= 1 << rnd.randrange(8)
    elif kind == 1:
        del buf[rnd.randrange(len(buf)):]
    elif kind == 2:
        at = rnd.randrange(len(buf))
        buf[at:at + 4] = rnd.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff\x0f", b"\x80\x00"))
    else:
        at = rnd.randrange(len(buf))
        buf[at:at] = rnd.randbytes(rnd.randrange(1, 6))
    return bytes(buf)


def test_every_version_outside_the_dict_apis_has_a_plan() -> None:
    """A message without a plan is read by the pure-Python reader: correct, but slow. Only float64 fields (client
    quotas) and the apis whose rows need the dicts are expected there."""
    planless = {(APIS[key][0], v, response) for key, v in VERSIONS for response in (False, True)
                if key not in bodies.DICT_APIS and plans.plan(key, v, response) is None}
    assert {name for name, _, _ in planless} <= {"DescribeClientQuotas", "AlterClientQuotas"}, planless


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data(), which=st.sampled_from(VERSIONS), response=st.booleans(), seed=st.integers(0, 1 << 30))
def test_messages_of_every_api_and_their_damaged_copies(data: st.DataObject, which: tuple[int, int],
                                                        response: bool, seed: int) -> None:
    api_key, version = which
    message = data.draw(strategies.message(api_key, version, response))
    rnd = random.Random(seed)
    if response:
        frame = response_frame(api_key, version, encode_response(api_key, version, message))
        assert assert_same("read_response", (api_key, version, frame))[0] == "ok"
        for _ in range(4):
            assert_same("read_response", (api_key, version, damage(frame, rnd)))
    else:
        body = encode_request(api_key, version, message)
        assert assert_same("read_request", (api_key, version, b"head" + body, 4))[0] == "ok"
        for _ in range(4):
            assert_same("read_request", (api_key, version, damage(body, rnd), 0))


Calls = list[tuple[str, tuple]]

CLUSTER = "kafka44_cluster_restart"
"""A real 3-node cluster, whose common messages carry tagged fields: a follower's Fetch v18 names itself in
`replica_state`, and so do a cluster's BrokerHeartbeats and its responses during leader changes (#30)."""


@pytest.fixture(scope="module")
def sample_calls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Calls]:
    """Every body read while dissecting each sample (on the pure-Python path, which is the one recorded)."""
    calls: dict[str, Calls] = {}
    patch = pytest.MonkeyPatch()
    patch.setattr(native, "compiled", False)
    sample: Calls = []
    for name in ("read_request", "read_response"):
        def record(*args: Any, _name: str = name, _read: Any = getattr(bodies, name)) -> Any:
            sample.append((_name, args))
            return _read(*args)
        record.__name__ = name
        patch.setattr(bodies, name, record)
    try:
        out = tmp_path_factory.mktemp("bodies")
        for capture in sorted(SAMPLES.glob("*.pcapng")):
            dissect_captures([str(capture)], str(out / capture.stem), ports=[9092, 19092, 39092])
            calls[capture.stem], sample[:] = list(sample), []
    finally:
        patch.undo()
    return calls


def _read_back(calls: Calls) -> tuple[int, int, int]:
    """Each call read by the compiled reader and compared with the reference: (bodies read in one pass, bodies
    handed back, bodies of the apis the pure-Python reader keeps by design)."""
    before = compiled.counts()
    for name, args in calls:
        assert assert_same(name, args)[0] == "ok"
    one_pass, handed_back = (now - then for now, then in zip(compiled.counts(), before))
    return one_pass, handed_back, sum(args[0] in bodies.DICT_APIS for _, args in calls)


def test_every_frame_of_the_samples_and_damaged_copies(sample_calls: dict[str, Calls]) -> None:
    rnd = random.Random(1124)
    everything = [call for calls in sample_calls.values() for call in calls]
    one_pass, handed_back, dict_apis = _read_back(everything)
    assert handed_back <= dict_apis + (one_pass + handed_back) // 50, (
        "the compiled reader hands too many sample bodies back to the pure-Python one", one_pass, handed_back)
    assert one_pass + handed_back == len(everything)
    for name, args in everything:
        if name == "read_request":
            api_key, version, frame, pos = args
            assert_same(name, (api_key, version, frame[:pos] + damage(frame[pos:], rnd), pos))
        else:
            api_key, version, frame = args
            assert_same(name, (api_key, version, frame[:4] + damage(frame[4:], rnd)))
    assert len({args[0] for _, args in everything}) >= 15


def test_a_real_clusters_bodies_are_read_in_one_pass(sample_calls: dict[str, Calls]) -> None:
    """Tagged fields included: only the apis the pure-Python reader keeps by design are handed back."""
    one_pass, handed_back, dict_apis = _read_back(sample_calls[CLUSTER])
    assert handed_back <= dict_apis, (CLUSTER, one_pass, handed_back)


# BrokerHeartbeat v2 request: broker_id, broker_epoch, current_metadata_offset, want_fence, want_shut_down, then the
# tagged section: offline_log_dirs (tag 0) and cordoned_log_dirs (tag 1), both compact arrays of uuids.
HEARTBEAT = struct.pack(">iqq??", 1, 5, 100, False, False)
DIRS = b"\x02" + bytes(range(16))  # one uuid
TAGGED = [  # (tagged section, what the reference makes of it: "ok", or the DecodeError's reason)
    (b"\x01\x00\x11" + DIRS, "ok"),
    (b"\x02\x00\x11" + DIRS + b"\x01\x01\x00", "ok"),  # the second one null
    (b"\x01\x01\x11" + DIRS, "ok"),
    (b"\x01\x00\xff\xff\xff\xff\x0f" + DIRS, "length_too_large"),  # absurd size
    (b"\x01\x00\x11" + DIRS[:-5], "length_too_large"),  # cut inside the value
    (b"\x01\x00", "truncated"),  # cut before the size
    (b"\x01", "length_too_large"),  # cut before the tag: more fields than bytes left
    (b"\xff\xff\xff\xff\x0f\x00\x11" + DIRS, "length_too_large"),  # absurd count
    (b"\x01\x80\x80\x80\x80\x80\x01\x11" + DIRS, "bad_varint"),  # a tag longer than 5 bytes
    (b"\x01\x00\x12" + DIRS + b"\x00", "bad_tagged_field"),  # the size says more than the value takes
    (b"\x01\x00\x10" + DIRS, "bad_tagged_field"),  # and less
    (b"\x01\x00\x11\xff\xff\xff\x0f" + bytes(range(13)), "length_too_large"),  # absurd count inside the value
    (b"\x01\x05\x03abc", "ok"),  # an unknown tag, kept raw
    (b"\x02\x00\x11" + DIRS + b"\x00\x01\x01", "ok"),  # a repeated tag: the last value in the first place
]


@pytest.mark.parametrize(("section", "expected"), TAGGED)
def test_tagged_fields_malformed_or_unusual_are_the_references_outcome(section: bytes, expected: str) -> None:
    """Both paths: the same Body, or the same DecodeError (reason and offset) that becomes the anomaly row."""
    ours = assert_same("read_request", (63, 2, b"head" + HEARTBEAT + section, 4))
    assert ours[0 if expected == "ok" else 1] == expected, ours


def test_known_tagged_fields_are_read_in_one_pass() -> None:
    before = compiled.counts()
    assert '"offline_log_dirs": ["AAECAwQFBgcICQoLDA0ODw"]' in compiled.read_request(
        63, 2, HEARTBEAT + TAGGED[0][0], 0).json
    assert [now - then for now, then in zip(compiled.counts(), before)] == [1, 0]


def test_strings_are_checked_and_escaped_as_python_does() -> None:
    """Kafka strings must be strict UTF-8 (no surrogates, no overlong forms); JSON escapes controls in lower hex."""
    for text in (b"plain", "\u00e9\u4e2d\U0001f600".encode(), b"\x00\x1f\"\\\n\r\t\b\x0c\x7f", b"\xed\xa0\x80",
                 b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xff", b"\xf0\x9f\x98"):
        # ListGroups v4 request: states_filter is a compact array of compact strings
        body = b"\x02" + bytes([len(text) + 1]) + text + b"\x00"
        assert_same("read_request", (16, 4, body, 0))
