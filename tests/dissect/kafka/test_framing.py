"""Framing one direction of a stream: chunking, gaps, impossible sizes, oversize frames, resynchronisation."""

from __future__ import annotations

import random
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatap.dissect.kafka.framing import MAX_FRAME, Framer
from kafkatap.dissect.kafka.plausible import RequestSync, ResponseSync
from kafkatap.dissect.protocol import encode_request, encode_request_header, encode_response, encode_response_header
from kafkatap.dissect.streams.reassembly import Where


def request(correlation_id: int, client_id: str = "t") -> bytes:
    """A real Metadata v9 request frame (size prefix included)."""
    body = encode_request_header({"api_key": 3, "api_version": 9, "correlation_id": correlation_id,
                                  "client_id": client_id})
    body += encode_request(3, 9, {"topics": None, "allow_auto_topic_creation": True,
                                  "include_topic_authorized_operations": False})
    return struct.pack(">i", len(body)) + body


def run(chunks: list, sync=None, synced: bool = True) -> tuple[list, dict]:
    skipped: dict[str, int] = {}

    def on_skip(reason: str, n: int, offset: int, where: Where) -> None:
        skipped[reason] = skipped.get(reason, 0) + n

    sync = sync or RequestSync()
    framer = Framer(sync, on_skip, synced=synced)
    frames = []
    for n, chunk in enumerate(chunks + [None]):
        where = Where("test", n, n)
        if isinstance(chunk, int):
            framer.gap(chunk, where)
            continue
        new = framer.feed(chunk, where) if chunk is not None else framer.close(where)
        for frame in new:
            if isinstance(sync, RequestSync):  # as the engine does: correlation ids count up per connection
                sync.last_correlation_id = corr(frame[2])
        frames += new
    return frames, skipped


def corr(payload: bytes) -> int:
    return struct.unpack_from(">i", payload, 4)[0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 200), min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_any_chunking_gives_the_same_frames(cuts: list[int], rnd: random.Random) -> None:
    stream = b"".join(request(i) for i in range(20))
    chunks, pos = [], 0
    for c in cuts:
        chunks.append(stream[pos:pos + c])
        pos += c
    chunks.append(stream[pos:])
    frames, skipped = run([c for c in chunks if c])
    assert [corr(p) for _, _, p in frames] == list(range(20))
    assert skipped == {}
    offsets = [off for _, off, _ in frames]
    assert offsets == [sum(len(request(j)) for j in range(i)) for i in range(20)]


def test_a_frame_gets_the_packet_of_its_first_byte() -> None:
    a, b = request(1), request(2)
    frames, _ = run([a[:5], a[5:] + b[:3], b[3:]])
    assert [at for at, _, _ in frames] == [Where("test", 0, 0), Where("test", 1, 1)]


def test_a_frame_found_at_the_end_gets_the_packet_of_its_first_byte() -> None:
    """A request-shaped frame whose check needs the end of the stream: close() finds it in what was buffered."""
    a = request(1)
    frames, _ = run([b"\0\0", a[:3], a[3:]], synced=False)
    assert [(at, off) for at, off, _ in frames] == [(Where("test", 1, 1), 2)]


def test_gap_inside_a_frame_keeps_the_next_frame() -> None:
    frames_in = [request(i) for i in range(5)]
    stream = b"".join(frames_in)
    start = len(frames_in[0]) + 6  # the gap cuts frame 1 after its size prefix
    frames, skipped = run([stream[:start], 10, stream[start + 10:]])
    assert [corr(p) for _, _, p in frames] == [0, 2, 3, 4]
    assert skipped == {"frame_lost_in_gap": len(frames_in[1]) - 10}


def test_gap_across_frames_resynchronises_on_the_next_request() -> None:
    frames_in = [request(i) for i in range(6)]
    stream = b"".join(frames_in)
    start = len(frames_in[0]) + 3
    lost = len(frames_in[1]) + len(frames_in[2])  # ends inside frame 3
    frames, skipped = run([stream[:start], lost, stream[start + lost:]])
    assert [corr(p) for _, _, p in frames] == [0, 4, 5]
    assert skipped["frame_lost_in_gap"] == 3
    assert skipped["resync"] == len(stream) - start - lost - sum(len(f) for f in frames_in[4:])


def test_absurd_size_is_a_desync_not_an_allocation() -> None:
    junk = b"\x7f\xff\xff\xff" + bytes(range(50))
    frames, skipped = run([request(0) + junk + request(1) + request(2)])
    assert [corr(p) for _, _, p in frames] == [0, 1, 2]
    assert skipped == {"bad_length": 0, "resync": len(junk)}


def test_negative_size_is_a_desync() -> None:
    frames, skipped = run([b"\x80\0\0\0" + request(7)])
    assert [corr(p) for _, _, p in frames] == [7]
    assert skipped["resync"] == 4


def test_oversize_frame_with_a_plausible_header_is_skipped_by_count() -> None:
    big = request(1)
    size = MAX_FRAME + 10
    header = struct.pack(">i", size) + big[4:]
    chunks = [request(0), header]
    left = size + 4 - len(header)
    while left:
        n = min(left, 1 << 20)
        chunks.append(b"\0" * n)
        left -= n
    chunks.append(request(2))
    frames, skipped = run(chunks)
    assert [corr(p) for _, _, p in frames] == [0, 2]
    assert skipped == {"oversize_frame": size + 4}


def test_random_bytes_never_become_frames_and_are_all_counted() -> None:
    rnd = random.Random(5)
    junk = bytes(rnd.getrandbits(8) for _ in range(20000))
    frames, skipped = run([junk[i:i + 1000] for i in range(0, len(junk), 1000)], synced=False)
    assert frames == []
    assert sum(skipped.values()) == len(junk)


def test_stream_starting_mid_frame_finds_the_first_whole_request() -> None:
    stream = b"".join(request(i) for i in range(4))
    frames, skipped = run([stream[7:]], synced=False)
    assert [corr(p) for _, _, p in frames] == [1, 2, 3]
    assert skipped == {"resync": len(request(0)) - 7}


def test_response_resync_needs_an_awaited_correlation_id() -> None:
    def response(c: int) -> bytes:  # Heartbeat v0: correlation id, error_code
        body = encode_response_header(12, 0, {"correlation_id": c}) + encode_response(12, 0, {"error_code": 0})
        return struct.pack(">i", len(body)) + body

    awaited = {41: (12, 0), 42: (12, 0)}
    stream = b"\x01\x02\x03" + response(40) + response(41) + response(42)
    frames, skipped = run([stream], sync=ResponseSync(lambda: awaited), synced=False)
    assert [struct.unpack_from(">i", p)[0] for _, _, p in frames] == [41, 42]
    assert skipped == {"resync": 3 + 10}


def test_truncated_last_frame_is_counted() -> None:
    a = request(0)
    frames, skipped = run([a + a[:9]])
    assert len(frames) == 1
    assert skipped == {"truncated_frame": 9}
