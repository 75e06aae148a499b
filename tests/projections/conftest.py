"""Fixtures of the projection tests: one SparkSession for the whole test session."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import require


@pytest.fixture(scope="session")
def spark_session():
    """The shared local SparkSession (``local[2]``); skips outside CI when Java or the JDBC jar
    is missing, fails under CI."""
    require(shutil.which("java") is not None, "Java is not installed (Spark needs Java 17)")
    require(os.path.exists("/usr/share/java/sqlite-jdbc.jar"), "sqlite-jdbc.jar missing: run scripts/system-deps.sh")
    from projections.spark_fold import get_spark, stop_spark

    spark = get_spark("local[2]", shuffle_partitions=2)
    yield spark
    stop_spark()
