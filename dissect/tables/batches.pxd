# Compiles batches.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name), without C
# declarations: the same Python semantics, without the interpreter's dispatch per record.
