# Compiles batch.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name), without C
# declarations: `Batch.records` runs for every batch with --records; compiled, the same Python semantics without the
# interpreter's dispatch.
