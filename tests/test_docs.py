"""The documents keep their checkable facts true: docs/schemas.md's tables are rendered from the schema modules (the
documented contract), docs/architecture.md's twin table names every compiled module and only files that exist, and
every relative link in the README and docs/ reaches a file and, when it names one, a heading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkatap.dissect import anomalies, native
from kafkatap.dissect.tables import schema as dissect_schema
from kafkatap.pipelines import schema as pipelines_schema
from tests.support.paths import ARCHITECTURE_DOC, DOCS, README, ROOT, SCHEMAS_DOC

TWIN_TABLE_HEADER = "| compiled module | pure-Python twin | direct test |"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("module", [dissect_schema, pipelines_schema, anomalies], ids=lambda m: m.__name__)
def test_schema_doc_tables_match_the_code(module) -> None:
    text = SCHEMAS_DOC.read_text()
    begin, end = f"<!-- BEGIN {module.__name__} -->\n", f"<!-- END {module.__name__} -->"
    documented = text[text.index(begin) + len(begin): text.index(end)]
    assert documented.strip() == module.document().strip(), (
        f"docs/schemas.md is out of date: paste `python -m {module.__name__} --markdown` between the "
        f"{module.__name__} markers")


def twin_rows() -> list[list[str]]:
    """The twin table's rows, as lists of cells."""
    lines = ARCHITECTURE_DOC.read_text().splitlines()
    start = lines.index(TWIN_TABLE_HEADER) + 2  # after the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_every_compiled_module_is_in_the_twin_table() -> None:
    # the compiled modules as native knows them (tests/dissect/test_native.py holds those lists to what setup.py
    # compiles): the .pyx twins, and the .py files compiled from themselves
    in_tree = ({name.removeprefix("kafkatap.").replace(".", "/") + ".pyx" for name in native.EXTENSIONS}
               | {name.removeprefix("kafkatap.").replace(".", "/") + ".py" for name in native.COMPILED_SOURCES})
    in_table = {row[0].strip("`") for row in twin_rows()}
    assert in_tree - in_table == set(), "compiled modules missing from docs/architecture.md's twin table"
    assert in_table - in_tree == set(), "the twin table names compiled modules that do not exist"


def test_every_path_in_the_twin_table_exists() -> None:
    named = {path for row in twin_rows() for cell in row for path in re.findall(r"`([\w/.]+\.pyx?)`", cell)}
    assert len(named) > 20
    assert sorted(p for p in named if not (ROOT / p).is_file()) == []


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (outside code blocks), repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"#{1,6} (.*)", line)
        if match:
            base = slug(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    return [target for target in LINK.findall(path.read_text()) if not re.match(r"[a-z]+:", target)]


DOCUMENTS = [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(document: Path) -> None:
    broken = []
    for target in links(document):
        file, _, anchor = target.partition("#")
        path = (document.parent / file).resolve() if file else document
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no such heading")
    assert broken == []


def test_readme_links_every_doc() -> None:
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    assert sorted(p.name for p in DOCS.glob("*.md") if p.resolve() not in linked) == []
