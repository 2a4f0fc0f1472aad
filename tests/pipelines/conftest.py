"""The Spark standalone cluster the cluster tests share: started once, by the first test that asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.spark_cluster import Cluster, standalone


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A master and two one-core workers on 127.0.0.1, stopped by their process ids when the session ends."""
    with standalone(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running
