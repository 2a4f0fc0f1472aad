# Declarations of the compiled writer: TableWriter's compiled base, whose fields `add` and `extend` read as C struct
# members, and those two functions, which the compiled row builders (_rows.pyx) call in C rather than through each
# TableWriter's `add` and `extend` attributes (a partial of these same functions).

cdef class WriterFields:
    cdef public object builder, rows, pending_bytes


cpdef add(WriterFields writer, row, Py_ssize_t nbytes=*)
cpdef extend(WriterFields writer, list rows)
