# Bounds of the C arrays the compiled message path indexes by api key and version. The schema's largest are far below
# (api key 94, version 18 today); a frame whose key or version is past them goes to the pure-Python path.

cdef enum:
    MAX_API_KEYS = 256
    MAX_API_VERSIONS = 64


cdef inline bint indexed(int api_key, int api_version) noexcept:
    """Whether (api_key, api_version) has a place in those arrays."""
    return 0 <= api_key < MAX_API_KEYS and 0 <= api_version < MAX_API_VERSIONS
