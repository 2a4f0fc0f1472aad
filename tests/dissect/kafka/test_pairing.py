"""Pairing requests with responses: by correlation id, in order, bounded."""

from __future__ import annotations

from dataclasses import dataclass

from kafkatap.dissect.kafka.pairing import MAX_IN_FLIGHT, InFlight


@dataclass
class Req:
    seq: int
    api_key: int = 3
    api_version: int = 9


def test_pipelined_responses_pair_in_order() -> None:
    flight = InFlight()
    for corr in (10, 11, 12):
        assert flight.add(corr, Req(corr)) == []
    assert flight.oldest(2) == {10: (3, 9), 11: (3, 9)}
    req, lost = flight.take(10)
    assert req.seq == 10 and lost == []
    assert len(flight) == 2


def test_a_later_answer_means_older_requests_lost_theirs() -> None:
    flight = InFlight()
    for corr in (1, 2, 3, 4):
        flight.add(corr, Req(corr))
    req, lost = flight.take(3)
    assert req.seq == 3 and [r.seq for r in lost] == [1, 2]
    assert [r.seq for r in flight.drain()] == [4]


def test_unknown_correlation_id_touches_nothing() -> None:
    flight = InFlight()
    flight.add(1, Req(1))
    assert flight.take(99) == (None, [])
    assert len(flight) == 1


def test_reused_correlation_id_and_the_cap_push_requests_out() -> None:
    flight = InFlight()
    flight.add(5, Req(1))
    assert [r.seq for r in flight.add(5, Req(2))] == [1]
    for i in range(MAX_IN_FLIGHT):
        out = flight.add(100 + i, Req(10 + i))
    assert [r.seq for r in out] == [2]
    assert len(flight) == MAX_IN_FLIGHT
