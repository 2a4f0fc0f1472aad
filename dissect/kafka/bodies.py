"""A message body read once into what the tables take from it: a `Body`.

A Body holds the message's JSON, what `extract.walk` finds in it (entity fields, topics, errors), the top-level fields
the frames row reads, and the partition rows `extract.COLLECT` asks for (record data, offsets). The decoded dicts
themselves are kept only for the apis whose rows read more than that (`DICT_APIS`): the others never need them.

`read_request` and `read_response` are the reference. Their compiled twins (`_bodies.pyx`) read the same bytes in one
pass, writing the JSON as they go instead of building dicts first, and hand anything unusual back to these.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.kafka import consumer_protocol as cp
from kafkatap.dissect.kafka.extract import (COLLECT, REQUEST_FIELDS, REQUEST_TOP, RESPONSE_FIELDS, Found, collect,
                                            dumps, top_level, walk)
from kafkatap.dissect.kafka.plausible import decode_answer
from kafkatap.dissect.protocol import decode_request, response_header_version
from kafkatap.dissect.protocol.codec import decoder
from kafkatap.dissect.protocol.generated.api_keys import ApiKey

DICT_APIS = cp.APIS | {ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE}
"""Apis whose rows read the decoded message: the consumer protocol inside JoinGroup / SyncGroup (decoded before
`walk`), the share/ table's acquired ranges and acknowledgements."""

WANTED = (REQUEST_FIELDS, ())
"""The fields `walk` looks for, by direction (0 request, 1 response)."""
TOP = (REQUEST_TOP, RESPONSE_FIELDS)
"""The top-level fields a Body keeps, by direction."""


class Body(NamedTuple):
    end: int  # offset after the body's last field (bytes after it are trailing)
    message: dict | None  # the decoded message, for DICT_APIS only
    json: str | None  # None until a DICT_APIS message is `walked`
    found: Found | None
    top: dict[str, Any] | None
    rows: list[tuple]  # what COLLECT asks for


_ANSWERS: dict[tuple[int, int], tuple[bool, Any]] = {}
"""(flexible response header, compiled body decoder) by (api_key, api_version) of the request answered."""


def read_request(api_key: int, api_version: int, frame: bytes, pos: int) -> Body:
    """The request body starting at pos (after the header); DecodeError if it does not decode."""
    message, end = decode_request(api_key, api_version, frame, pos)
    return _read(api_key, False, message, end)


def read_response(api_key: int, api_version: int, frame: bytes) -> Body:
    """A response frame (header included) as the answer to a request of (api_key, api_version)."""
    message, end = _decode_answer(api_key, api_version, frame)
    return _read(api_key, True, message, end)


def walked(body: Body, found: Found, response: bool) -> Body:
    """A DICT_APIS body once its message has been walked (and the consumer protocol decoded into it)."""
    message = body.message
    return body._replace(json=dumps(message), found=found, top=top_level(message, TOP[response]))


def _read(api_key: int, response: bool, message: dict, end: int) -> Body:
    rows = collect(message, COLLECT.get((api_key, response)))
    if api_key in DICT_APIS:
        return Body(end, message, None, None, None, rows)
    found = walk(message, WANTED[response])
    return Body(end, None, dumps(message), found, top_level(message, TOP[response]), rows)


def _decode_answer(api_key: int, api_version: int, frame: bytes) -> tuple[dict, int]:
    """`decode_answer` with the response header skipped inline in the usual case (v0 header, or a flexible one with
    no tagged fields), so each response costs one compiled decoder call. Anything else, a decode error included,
    goes through `decode_answer`, which gives the same body or raises the same error (and knows the ApiVersions
    fallback)."""
    answer = _ANSWERS.get((api_key, api_version))
    if answer is None:
        answer = _ANSWERS[(api_key, api_version)] = (response_header_version(api_key, api_version) == 1,
                                                     decoder(api_key, api_version, True))
    flexible, decode = answer
    if not flexible:
        pos = 4
    elif len(frame) > 4 and frame[4] == 0:
        pos = 5
    else:
        return decode_answer(api_key, api_version, frame)
    try:
        return decode(frame, pos)
    except DecodeError:
        return decode_answer(api_key, api_version, frame)
