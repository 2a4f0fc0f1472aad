"""The anomaly kinds are a closed list: every kind the dissector reports is declared in dissect/anomalies.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import kafkatap.dissect
from kafkatap.dissect.anomalies import KINDS
from kafkatap.dissect.streams.reassembly import Where
from kafkatap.dissect.tables.rows import Rows

REPORTERS = {"report", "anomaly", "_anomaly", "problem", "Anomaly", "_drop", "bad", "on_anomaly"}
"""The calls through which a layer reports an anomaly, whose literal kind argument must be declared."""


def reported_literals() -> dict[str, str]:
    """Every lowercase word passed as a literal to a reporting call in the dissector's source, with where it is."""
    found = {}
    root = Path(kafkatap.dissect.__file__).parent
    for path in root.rglob("*.py"):
        if "generated" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in REPORTERS:
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and re.fullmatch(r"[a-z_]+",
                                                                                                      arg.value):
                        found[arg.value] = f"{path.relative_to(root)}:{node.lineno}"
    return found


def test_every_reported_kind_is_declared() -> None:
    found = reported_literals()
    assert len(found) > 15, "the scan found too few reporting calls to mean anything"
    undeclared = {kind: at for kind, at in found.items() if kind not in KINDS}
    assert not undeclared, f"declare these in dissect/anomalies.py: {undeclared}"


def test_an_undeclared_kind_stops_the_row() -> None:
    rows = Rows.__new__(Rows)
    with pytest.raises(ValueError, match="not declared"):
        rows.anomaly("something_new", "detail", Where("f.pcap", 0, 0), None, None, None, 0)


def test_every_kind_has_a_stage_and_a_sentence() -> None:
    for name, kind in KINDS.items():
        assert re.fullmatch(r"[a-z_]+", name)
        assert kind.stage and kind.meaning[0].isupper() and kind.meaning.endswith("."), name
