# Compiles skips.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name) with Skips' fields
# as C struct members, so the compiled sink (_sink.pyx) reads a direction's `run` in C before each frame it cuts.

cdef class Skips:
    cdef public object out, conn_id, account, direction, run
