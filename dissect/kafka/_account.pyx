# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of account.Account: the same methods and results, with each direction's seen and decoded counts as
C integers (_account.pxd), which the compiled paths add to for every segment and message."""


cdef class Account:
    """Both directions of one connection, indexed by direction (REQUEST, RESPONSE)."""

    def __init__(self):
        self.skips = ({}, {})
        self.gaps = [0, 0]

    def seen(self, int direction, long long nbytes):
        self.seen_bytes[direction] += nbytes

    def decoded(self, int direction, long long nbytes):
        self.decoded_bytes[direction] += nbytes

    def skipped(self, int direction, str reason, nbytes):
        book = self.skips[direction]
        book[reason] = book.get(reason, 0) + nbytes

    def lost(self, int direction, nbytes):
        """Bytes the capture lost (a TCP gap): outside the equation."""
        self.gaps[direction] += nbytes

    def total(self, str reason):
        """Bytes skipped for reason, both directions together."""
        return self.skips[0].get(reason, 0) + self.skips[1].get(reason, 0)

    def balance(self, int direction):
        """One direction as summary.json's byte account states it."""
        return {"seen": self.seen_bytes[direction], "decoded": self.decoded_bytes[direction],
                "skipped": dict(self.skips[direction]), "lost_in_gaps": self.gaps[direction]}
