# Compiles pairing.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name) with InFlight's
# requests as a C struct member, so the compiled exchange (_exchange.pyx) reaches them in C for every message.

cdef class InFlight:
    cdef public dict pending
