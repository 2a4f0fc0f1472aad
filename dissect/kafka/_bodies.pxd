# Declarations of the compiled body readers, which the exchange's compiled fast paths (_exchange.pyx) call in C.

cpdef read_request(int api_key, int api_version, frame, Py_ssize_t pos)
cpdef read_response(int api_key, int api_version, frame)
