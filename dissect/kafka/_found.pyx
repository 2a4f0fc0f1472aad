# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of extract.Found: the same fields and constructor, with the fields as C struct members (_found.pxd).
Every decoded body has one, filled by the compiled body reader and read by the compiled message path."""


cdef class Found:
    """What one walk collected."""

    def __init__(self):
        self.fields = {}
        self.topics = []  # names, in order of appearance
        self.topic_ids = []  # ids, in order of appearance
        self.id_names = []  # (topic_id, name) pairs the message states (Metadata, ...)
        self.first_error = 0  # first non-zero error code anywhere (error_code, partition_error_code, ...)
        self.has_error = False  # the message has any error code field
