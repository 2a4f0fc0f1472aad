# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of rows.frame. The usual pair (a request and its response, both decoded, not a share api) gets its
frames/ row built here, as the pure-Python function builds it; every other pair or half goes to that function."""

from kafkatap.dissect.protocol import error_name
from kafkatap.dissect.protocol.generated import APIS
from kafkatap.dissect.tables import rows as reference  # its names are looked up at call time: it imports this module

cdef dict _NAMES = {key: row[0] for key, row in APIS.items()}
cdef tuple _NONE = (None,) * 11


def frame(rows, st, req, resp, where, unpaired=False):
    if unpaired or resp is None:
        return reference.frame(rows, st, req, resp, where, unpaired)
    qbody, rbody, api_key = req.body, resp.body, req.api_key
    name = _NAMES.get(api_key)
    if (qbody is None or rbody is None or name is None or req.error is not None or resp.error is not None
            or not req.known or api_key in reference.SHARE_APIS):
        return reference.frame(rows, st, req, resp, where, unpaired)
    messages, statuses = rows.messages, rows.statuses
    messages[name] = messages.get(name, 0) + 1
    resp_ts = resp.ts
    if req.produce is not None:
        rows.produce_batches(st, req, rbody, rows._problem(st, 1, req, where))
    statuses["ok"] = statuses.get("ok", 0) + 1
    qfound, rfound, rf = qbody.found, rbody.found, rbody.top
    qf = qfound.fields
    code = rf.get("error_code")
    if not code:
        code = rfound.first_error or (0 if rfound.has_error else None)
    if qfound.topic_ids or rfound.topic_ids:
        topics = rows.topic_list(qfound, rfound)
    else:
        topics = tuple(dict.fromkeys(qfound.topics + rfound.topics)) or None
    request_json, response_json = qbody.json, rbody.json
    rows.frames.add((
        st.conn_id, st.client_addr, st.broker_addr, req.ts, resp_ts, resp_ts - req.ts, api_key, name,
        req.api_version, req.correlation_id, req.client_id, req.size, resp.size, code,
        error_name(code) if code is not None else None, "ok",
    ) + (reference._entities(qf, rf) if qf or len(rf) > ("throttle_time_ms" in rf) + ("error_code" in rf)
         else _NONE) + (topics, rf.get("throttle_time_ms"), None, request_json, response_json),
        len(request_json) + len(response_json))
