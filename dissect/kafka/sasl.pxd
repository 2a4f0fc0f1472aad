# Compiles sasl.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name) with SaslTokens'
# fields as C struct members, so the compiled exchange (_exchange.pyx) reads `expected` in C for every request.

cdef class SaslTokens:
    cdef public object req_sync, resp_sync, expected
