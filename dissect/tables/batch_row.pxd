# C types of batch_row.py (Cython's pure-Python mode: this file augments it, and setup.py compiles it), so the
# compiled row builders (_rows.pyx) call the one batches/ row builder in C.

cimport cython

cdef long long _MAX_MS
cdef tuple COMPRESSION
cdef long TRANSACTIONAL, CONTROL

cpdef bint is_transactional(long attributes)
cpdef bint is_control(long attributes)
cpdef str compression(long attributes)
cpdef object timestamp_us(long long ms)
cpdef long long column_us(long long ms)

@cython.locals(fields=tuple, attributes=long, first="long long", last="long long", i=Py_ssize_t)
cpdef list batch_rows(tuple head, list batches, tuple tail, problem, list prints=*)
