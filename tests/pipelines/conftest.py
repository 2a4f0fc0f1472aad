"""The Spark standalone cluster the cluster tests share (started once, by the first test that asks for it), and the
py4j commands a test's session sends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.spark_cluster import Cluster, standalone


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A master and two one-core workers on 127.0.0.1, stopped by their process ids when the session ends."""
    with standalone(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


@pytest.fixture
def py4j_commands(spark, monkeypatch) -> list[str]:
    """The commands the session's py4j client sends from now on, on any thread (py4j's finalizer's too)."""
    client = spark.sparkContext._gateway._gateway_client
    sent: list[str] = []
    send = client.send_command

    def counted(command: str, *args, **kwargs):
        sent.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted)
    return sent
