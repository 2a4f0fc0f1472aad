"""Faithful JSON for decoded messages: bytes become {"$bytes": base64} so nothing is lost or mangled."""

from __future__ import annotations

import base64
import json
import math
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}  # JSON has no NaN/inf; keep them distinguishable instead of invalid JSON
    return value


def to_json(obj: Any, indent: int | None = None) -> str:
    """A decoded message (or any part of one) as JSON; tagged-field numbers become string keys."""
    return json.dumps(_plain(obj), ensure_ascii=False, indent=indent)
