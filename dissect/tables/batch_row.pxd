# C types of batch_row.py (Cython's pure-Python mode: this file augments it, and setup.py compiles it), so the
# compiled row builders (_rows.pyx) call the one batches/ row builder in C.

cimport cython

cdef long long _MAX_MS
cdef tuple COMPRESSION
cdef long TRANSACTIONAL, CONTROL

@cython.locals(fields=tuple, attributes=long, first="long long", last="long long")
cpdef list batch_rows(tuple head, list batches, tuple tail, problem)
