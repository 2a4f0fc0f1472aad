# Compiles orphans.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name) with Orphans'
# fields as C struct members, so the compiled exchange (_exchange.pyx) reads `held` in C for every request.

cdef class Orphans:
    cdef public dict held
    cdef public object nbytes
