# Compiles record_batch.py (Cython's pure-Python mode: setup.py builds every .py with a .pxd of its name), without C
# declarations: its lengths and varints come from hostile bytes, so its arithmetic stays Python's, which never wraps.
