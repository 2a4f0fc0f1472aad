"""Which api keys and versions exist, their header versions, and per-version field lists from the generated tables.

Message tables are imported lazily (one module per api key) so a capture with five api keys loads five tables.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from kafkatap.dissect.protocol.generated import APIS
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.protocol.generated.errors import ERRORS
from kafkatap.dissect.protocol.table import Field, Message, fields_for, in_ranges, is_flexible, parse_versions

_VALID = {key: parse_versions(row[2]) for key, row in APIS.items()}
_FLEXIBLE = {key: parse_versions(row[3]) for key, row in APIS.items()}


def api_name(api_key: int) -> str | None:
    row = APIS.get(api_key)
    return row[0] if row else None


def api_versions(api_key: int) -> range | None:
    """All versions either schema set defines (they are contiguous for every api key)."""
    ranges = _VALID.get(api_key)
    if not ranges:
        return None
    return range(ranges[0][0], ranges[-1][1] + 1)


def is_known(api_key: int, api_version: int) -> bool:
    ranges = _VALID.get(api_key)
    return bool(ranges) and in_ranges(api_version, ranges)


def is_flexible_version(api_key: int, api_version: int) -> bool:
    return in_ranges(api_version, _FLEXIBLE.get(api_key, ()))


def _request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible_version(api_key, api_version) else 1


REQUEST_HEADER_VERSIONS = {(key, v): _request_header_version(key, v) for key in APIS for v in api_versions(key) or ()}


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible versions, 0 for ControlledShutdown v0 (it predates client_id), else 1 (also when unknown)."""
    return REQUEST_HEADER_VERSIONS.get((api_key, api_version), 1)


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible versions, except ApiVersions: always 0 so that any client can read the versions it may use."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible_version(api_key, api_version) else 0


def error_name(code: int) -> str:
    return ERRORS.get(code) or f"UNKNOWN_ERROR_{code}"


@lru_cache(maxsize=None)
def message(api_key: int, response: bool) -> Message:
    module = importlib.import_module(f"kafkatap.dissect.protocol.generated.{APIS[api_key][1]}")
    return module.RESPONSE if response else module.REQUEST


@lru_cache(maxsize=None)
def body_fields(api_key: int, api_version: int, response: bool) -> tuple[tuple[Field, ...], bool]:
    """The field list of one message version and whether it is flexible (caller checked is_known)."""
    msg = message(api_key, response)
    flexible = is_flexible(msg, api_version)
    return fields_for(msg.fields, api_version, flexible), flexible


@lru_cache(maxsize=None)
def header_fields(response: bool, version: int) -> tuple[tuple[Field, ...], bool]:
    from kafkatap.dissect.protocol.generated import headers

    msg = headers.RESPONSE_HEADER if response else headers.REQUEST_HEADER
    flexible = is_flexible(msg, version)
    return fields_for(msg.fields, version, flexible), flexible
