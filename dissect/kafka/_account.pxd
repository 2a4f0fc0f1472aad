# Declaration of the compiled twin of account.Account, so the compiled framing and exchange paths (_sink.pyx,
# _exchange.pyx) book the usual segment's and message's bytes in C.

cdef class Account:
    cdef long long[2] seen_bytes, decoded_bytes
    cdef tuple skips  # by direction: reason -> bytes, in the order the reasons were first booked
    cdef public list gaps
