# Declaration of the fields of framing.Framer, which its compiled base class (_framing.pyx) holds as C struct
# members, so the compiled sink (_sink.pyx) reads and updates a framer in C for the usual segment.

cdef class FramerFields:
    cdef public object sync, on_skip, buf, buf_at, marks, offset, skip, skip_reason, need
    cdef public bint synced, anchored
