# cython: language_level=3, boundscheck=True, wraparound=False
"""The compiled base of framing.Framer: its fields as C struct members (_framing.pxd), its methods still the ones
framing.py defines. The compiled sink reads and updates six of them for every segment; as slots each access is an
attribute lookup."""


cdef class FramerFields:
    """Framer's fields; Framer.__init__ sets them."""
