"""The jar of kafkatap's JVM classes: compiled once from every Java source of the package, then reused."""

from __future__ import annotations

import logging
import subprocess
import zipfile

from kafkatap.pipelines import class_archive, jvm_jar, planner_extension


def test_the_jar_holds_every_java_source_compiled_once_and_then_reused(tmp_path, monkeypatch):
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    jar = jvm_jar.jar()
    assert jar is not None and jar.parent == tmp_path
    assert {"OneTaskShuffles.java", "LoadedClasses.java", "ClassLookups.java"} <= {s.name for s in jvm_jar.SOURCES}
    assert {f"kafkatap/{source.stem}.class" for source in jvm_jar.SOURCES} <= set(zipfile.ZipFile(jar).namelist())
    assert list(tmp_path.iterdir()) == [jar]  # nothing half-written left beside it

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    assert jvm_jar.jar() == jar
    assert planner_extension.session_settings() == {"spark.jars": str(jar),
                                                    "spark.sql.extensions": planner_extension.EXTENSION}


def test_a_changed_source_is_another_jar(tmp_path, monkeypatch):
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "cache"))
    copies = []
    for source in jvm_jar.SOURCES:
        copies.append(tmp_path / source.name)
        copies[-1].write_bytes(source.read_bytes())
    monkeypatch.setattr(jvm_jar, "SOURCES", copies)
    before = jvm_jar.jar_path()
    copies[-1].write_text(copies[-1].read_text() + "\n// changed\n")
    assert jvm_jar.jar_path() != before


def test_without_a_java_compiler_a_run_goes_on_without_its_jvm_classes(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger=jvm_jar.__name__):
        assert planner_extension.session_settings() == {}
    assert "no Java compiler" in caplog.text and list(tmp_path.iterdir()) == []


def test_a_source_that_does_not_compile_is_a_warning_not_a_failure(tmp_path, monkeypatch, caplog):
    broken = tmp_path / "src" / "OneTaskShuffles.java"
    broken.parent.mkdir()
    broken.write_text("package kafkatap; class OneTaskShuffles { not java }")
    monkeypatch.setattr(jvm_jar, "SOURCES", [broken])
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "cache"))
    with caplog.at_level(logging.WARNING, logger=jvm_jar.__name__):
        assert jvm_jar.jar() is None
    assert "did not compile" in caplog.text and "OneTaskShuffles.java" in caplog.text
    assert list((tmp_path / "cache").iterdir()) == []
