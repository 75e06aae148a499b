"""The Spark JVM's class-data-sharing archive (projections.spark_cds): where it lives, the JVM
options that write and use it, and that only an archive a JVM has started on gets its final name
(a truncated one would crash every later replay's JVM with SIGBUS)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from projections import spark_cds
from tests.conftest import require


@pytest.fixture
def cds_dir(tmp_path, monkeypatch):
    require(shutil.which("java") is not None, "Java is not installed (archive_path() is None without it)")
    monkeypatch.setenv("SHOAL_SPARK_CDS_DIR", str(tmp_path))
    monkeypatch.delenv("SHOAL_SPARK_CDS", raising=False)
    monkeypatch.delenv("SHOAL_SPARK_CDS_DUMP", raising=False)
    return tmp_path


def test_archive_options(cds_dir, monkeypatch):
    path = spark_cds.archive_path()
    assert path.parent == cds_dir and path.suffix == ".jsa"
    assert spark_cds.archive_java_options() == ""  # not built yet
    path.write_bytes(b"x")
    assert f"-XX:SharedArchiveFile={path}" in spark_cds.archive_java_options()
    monkeypatch.setenv("SHOAL_SPARK_CDS_DUMP", str(cds_dir / "t.jsa"))
    assert f"-XX:ArchiveClassesAtExit={cds_dir / 't.jsa'}" in spark_cds.archive_java_options()
    monkeypatch.delenv("SHOAL_SPARK_CDS_DUMP")
    monkeypatch.setenv("SHOAL_SPARK_CDS", "off")
    assert spark_cds.archive_path() is None and spark_cds.archive_java_options() == ""


def _fake_run(training_rc: int, check_rc: int, calls: list):
    def run(cmd, **kw):
        calls.append(cmd)
        if "--train" in cmd:
            dump = kw["env"]["SHOAL_SPARK_CDS_DUMP"]
            with open(dump, "wb") as f:
                f.write(b"half an archive")
            return subprocess.CompletedProcess(cmd, training_rc, "", "training output")
        return subprocess.CompletedProcess(cmd, check_rc, b"", b"")

    return run


@pytest.mark.parametrize("training_rc, check_rc", [(0, 134), (1, 0)])
def test_an_archive_that_fails_is_never_renamed(cds_dir, monkeypatch, training_rc, check_rc):
    calls: list = []
    monkeypatch.setattr(spark_cds.subprocess, "run", _fake_run(training_rc, check_rc, calls))
    assert spark_cds.build_archive() is None
    assert not spark_cds.archive_path().exists()
    assert list(cds_dir.iterdir()) == []  # the temporary file is gone too
    assert len(calls) == (2 if training_rc == 0 else 1)


def test_a_checked_archive_is_renamed_and_then_reused(cds_dir, monkeypatch):
    calls: list = []
    monkeypatch.setattr(spark_cds.subprocess, "run", _fake_run(0, 0, calls))
    path = spark_cds.build_archive()
    assert path == spark_cds.archive_path() and path.read_bytes() == b"half an archive"
    check = calls[1]  # a JVM started on the temporary file before the rename
    assert check[-1] == "-version" and check[1].startswith(f"-XX:SharedArchiveFile={path}.") and check[1].endswith(".tmp")
    assert spark_cds.build_archive() == path and len(calls) == 2  # exists: not built again


def test_the_key_follows_the_jars_path_size_and_time(cds_dir, tmp_path, monkeypatch):
    """The JVM ignores an archive whose class path changed (a jar's path, size or modification
    time): a reinstalled or second virtualenv must get its own archive, not a stale one (the CI
    failure this guards against: a clean clone found the session's archive and its JVM ignored it)."""
    jars = tmp_path / "venv-a" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"one")
    monkeypatch.setattr(spark_cds, "_jars_dir", lambda: jars)
    first = spark_cds.archive_path()
    assert spark_cds.archive_path() == first  # stable while nothing changes
    os.utime(jars / "spark-core.jar", ns=(1, 1))
    touched = spark_cds.archive_path()
    assert touched != first
    (jars / "spark-core.jar").write_bytes(b"three")
    os.utime(jars / "spark-core.jar", ns=(1, 1))
    assert spark_cds.archive_path() not in (first, touched)
    other = tmp_path / "venv-b" / "jars"
    shutil.copytree(jars, other)
    os.utime(other / "spark-core.jar", ns=(1, 1))
    monkeypatch.setattr(spark_cds, "_jars_dir", lambda: other)
    assert spark_cds.archive_path() != first  # same names, sizes and times, another path


def test_building_prunes_archives_of_deleted_or_replaced_virtualenvs(cds_dir, tmp_path, monkeypatch):
    live_jars, ours = tmp_path / "live" / "jars", tmp_path / "ours" / "jars"
    live_jars.mkdir(parents=True)
    ours.mkdir(parents=True)
    monkeypatch.setattr(spark_cds, "_jars_dir", lambda: ours)
    stale = cds_dir / "spark-cds-4.3.0-0000000000000001.jsa"
    live = cds_dir / "spark-cds-4.3.0-0000000000000002.jsa"
    unknown = cds_dir / "spark-cds-4.3.0-0000000000000003.jsa"  # no sidecar: not ours to judge
    replaced = cds_dir / "spark-cds-4.3.0-0000000000000004.jsa"  # an earlier install at our path
    for a in (stale, live, unknown, replaced):
        a.write_bytes(b"archive")
    (cds_dir / (stale.name + ".jars")).write_text(str(tmp_path / "deleted-clone" / "jars"))
    (cds_dir / (live.name + ".jars")).write_text(str(live_jars))
    (cds_dir / (replaced.name + ".jars")).write_text(str(ours))
    calls: list = []
    monkeypatch.setattr(spark_cds.subprocess, "run", _fake_run(0, 0, calls))
    built = spark_cds.build_archive()
    assert built.is_file() and (cds_dir / (built.name + ".jars")).read_text() == str(ours)
    for gone in (stale, replaced):
        assert not gone.exists() and not (cds_dir / (gone.name + ".jars")).exists()
    assert live.exists() and unknown.exists()


@pytest.mark.spark
def test_the_spark_jvm_maps_the_archive(spark_session):
    """``make test`` builds the archive before the suite; the session's JVM then maps it (the
    file appears in the process's memory maps: the JVM accepted it, not only was given it)."""
    path = spark_cds.archive_path()
    require(path is not None and path.is_file(), "no class-data archive built (make test builds it: python -m projections.spark_cds)")
    pid = spark_session.sparkContext._jvm.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/maps") as f:
        assert str(path) in f.read()
