"""The byte account of one connection: every byte a direction delivers is booked once, as decoded or as skipped with
a reason, so the summary can prove nothing was silently dropped (seen = decoded + Σ skipped[reason]). Bytes the
capture never had are kept beside it, as lost in gaps, since nobody saw them."""

from __future__ import annotations

from typing import Any

from kafkatap.dissect import native


class Account:
    """Both directions of one connection, indexed by direction (REQUEST, RESPONSE)."""

    __slots__ = ("books", "gaps")

    def __init__(self) -> None:
        self.books: tuple[dict[str, int], dict[str, int]] = ({"seen": 0, "decoded": 0}, {"seen": 0, "decoded": 0})
        self.gaps = [0, 0]

    def seen(self, direction: int, nbytes: int) -> None:
        self.books[direction]["seen"] += nbytes

    def decoded(self, direction: int, nbytes: int) -> None:
        self.books[direction]["decoded"] += nbytes

    def skipped(self, direction: int, reason: str, nbytes: int) -> None:
        book = self.books[direction]
        book[reason] = book.get(reason, 0) + nbytes

    def lost(self, direction: int, nbytes: int) -> None:
        """Bytes the capture lost (a TCP gap): outside the equation."""
        self.gaps[direction] += nbytes

    def total(self, reason: str) -> int:
        """Bytes skipped for reason, both directions together."""
        return self.books[0].get(reason, 0) + self.books[1].get(reason, 0)

    def balance(self, direction: int) -> dict[str, Any]:
        """One direction as summary.json's byte account states it."""
        book = self.books[direction]
        return {"seen": book["seen"], "decoded": book["decoded"],
                "skipped": {k: v for k, v in book.items() if k not in ("seen", "decoded")},
                "lost_in_gaps": self.gaps[direction]}


_compiled = native.extension("kafkatap.dissect.kafka._account")
if native.compiled and _compiled is not None:  # its compiled twin, to which the compiled paths add in C
    Account = _compiled.Account  # type: ignore[misc]
