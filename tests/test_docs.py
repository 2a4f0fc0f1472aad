"""docs/schemas.md's tables are rendered from the schema modules: this keeps the documented contract true."""

import pytest

from kafkatap.dissect import anomalies
from kafkatap.dissect.tables import schema as dissect_schema
from kafkatap.pipelines import schema as pipelines_schema
from tests.support.paths import SCHEMAS_DOC


@pytest.mark.parametrize("module", [dissect_schema, pipelines_schema, anomalies], ids=lambda m: m.__name__)
def test_schema_doc_tables_match_the_code(module) -> None:
    text = SCHEMAS_DOC.read_text()
    begin, end = f"<!-- BEGIN {module.__name__} -->\n", f"<!-- END {module.__name__} -->"
    documented = text[text.index(begin) + len(begin): text.index(end)]
    assert documented.strip() == module.document().strip(), (
        f"docs/schemas.md is out of date: paste `python -m {module.__name__} --markdown` between the "
        f"{module.__name__} markers")
