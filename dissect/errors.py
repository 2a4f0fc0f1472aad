"""The one error type of the codec and record decoders.

Every problem in a message becomes a `DecodeError` with the byte offset where it was found and a reason from a closed
list, so the dissector can count problems by kind instead of parsing exception text.
"""

from __future__ import annotations

REASONS: dict[str, str] = {
    "truncated": "the message ends before the field does",
    "negative_length": "a length or count below -1 (or below 0 where null is not allowed)",
    "length_too_large": "a length or count larger than the bytes left",
    "bad_varint": "a varint longer than its type allows",
    "bad_utf8": "a string that is not UTF-8",
    "null_not_allowed": "null in a field that is not nullable in this version",
    "trailing_bytes": "bytes left over after the last field",
    "unknown_api": "an api key this codec does not know",
    "unknown_version": "a version the schemas do not define for this api key",
    "bad_magic": "a record batch magic byte other than 0, 1 or 2",
    "bad_compression": "a compression codec id that does not exist, or data it cannot decompress",
    "crc_mismatch": "a checksum that does not match",
    "bad_value": "a value that cannot be encoded in its field",
    "bad_tagged_field": "a tagged field whose declared size does not match the value it carries",
}


class DecodeError(ValueError):
    """A message (or record batch) that cannot be decoded, with where and why."""

    def __init__(self, reason: str, offset: int, detail: str = "") -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown decode error reason {reason!r}")
        self.reason = reason
        self.offset = offset
        self.detail = detail
        super().__init__(f"{reason} at offset {offset}" + (f": {detail}" if detail else ""))
