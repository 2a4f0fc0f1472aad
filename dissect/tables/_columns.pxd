# Declarations of the compiled writer: TableWriter's compiled base, whose fields `add` and `extend` read as C struct
# members, and those two functions, which the compiled row builders (_rows.pyx) call in C rather than through each
# TableWriter's `add` and `extend` attributes (a partial of these same functions); and the row builder's columns,
# which a compiled row builder may also write a run of values, or one C value, at a time (`Builder.values`,
# `integer` .. `row_end`), without a tuple for the row.

cdef struct Buf:
    char* p
    Py_ssize_t size
    Py_ssize_t cap

cdef struct Col:
    int kind
    Py_ssize_t nulls
    Buf valid  # validity bits
    Buf values  # fixed-width values or bits, or the int32 offsets of a variable-width column
    Buf data  # the bytes of a variable-width column (of its items, for list<string>)
    Buf items  # list<string>: the int32 offsets of the items


cdef class Builder:
    cdef Col* cols
    cdef Py_ssize_t width
    cdef readonly Py_ssize_t rows
    cdef object types

    cdef int _start(self) except -1
    cdef bint take(self, object row) except -1
    cdef bint _add(self, tuple row) except -1
    cdef Py_ssize_t values(self, Py_ssize_t start, tuple items) except -1
    cdef int integer(self, Py_ssize_t c, long long x) except -1
    cdef int boolean(self, Py_ssize_t c, bint x) except -1
    cdef int null(self, Py_ssize_t c) except -1
    cdef int row_end(self) except -1
    cdef int row_undo(self, Py_ssize_t upto) except -1


cdef class WriterFields:
    cdef public object builder, rows
    cdef public Py_ssize_t pending_bytes  # added to for every frames/ row (`add`), in C


cpdef add(WriterFields writer, row, Py_ssize_t nbytes=*)
cpdef extend(WriterFields writer, list rows)
cdef Builder builder_of(WriterFields writer)
cdef int rows_added(WriterFields writer) except -1
