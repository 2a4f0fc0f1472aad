# C signature of frames_row.frame_row (Cython's pure-Python mode: this file augments frames_row.py, which setup.py
# compiles), so the compiled row builders (_rows.pyx) call the one frames/ row builder in C.

cpdef tuple frame_row(conn_id, client_addr, broker_addr, ts_request, ts_response, api_key, api_name, api_version,
                      correlation_id, client_id, request_bytes, response_bytes, error_code, error_name, status,
                      tuple entities, topics, throttle_time_ms, decode_error, request_json, response_json, tls,
                      request_file, request_packet, response_file, response_packet)
