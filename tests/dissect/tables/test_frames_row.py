"""The frames/ row has one builder (dissect/tables/frames_row.py), which both twins run: its plain-Python source (what
an install without the compiled core imports) and its compiled build give the same row, in schema.py's columns."""

from __future__ import annotations

import inspect
import re

from kafkatap.dissect.tables import frames_row, schema
from tests.support.paths import ROOT
from tests.support.sources import source_module

SOURCE = ROOT / "dissect" / "tables" / "frames_row.py"


def test_the_source_and_the_installed_builder_give_the_same_row_in_the_schemas_columns() -> None:
    """Each argument lands in the column of its name: called with every column's name as its value (timestamps
    aside), the row is the schema's column names."""
    names = schema.TABLES["frames"].names
    entities = tuple(names[names.index("group_id"):names.index("transactional_id") + 1])
    assert len(entities) == frames_row.ENTITIES
    params = list(inspect.signature(source_module(SOURCE).frame_row).parameters)
    args = {name: name for name in params} | {"entities": entities, "ts_request": 100, "ts_response": 250}
    source = source_module(SOURCE)
    for call in (args, args | {"ts_request": None}):
        row = frames_row.frame_row(*call.values())
        assert row == source.frame_row(*call.values())
        expected = [call.get(name, name) for name in names]
        expected[names.index("latency_us")] = None if call["ts_request"] is None else 150
        assert list(row) == expected


def test_no_other_module_lays_out_the_row() -> None:
    """Every frames/ row the row modules write is the builder's: each write to the frames/ table is of a frame_row
    call (the connection's columns are its arguments, not read by it)."""
    writes = []
    for path in (ROOT / "dissect" / "tables").glob("*rows.py*"):
        text = path.read_text()
        writes += [(path.name, text[w.end():w.end() + 10])
                   for w in re.finditer(r"frames\.add\(|_add\(rows\.frames, ", text)]
    assert len(writes) == 3  # rows.frame, Rows.response_only and the compiled frame
    assert all(call == "frame_row(" for _, call in writes), writes
