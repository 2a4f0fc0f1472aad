# Declaration of the compiled batch_rows, which the compiled row builders (_rows.pyx) call in C.

cpdef list batch_rows(tuple head, list batches, tuple tail, problem)
