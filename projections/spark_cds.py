"""A class-data-sharing (AppCDS) archive for the Spark engine's JVM.

A replay starts a fresh JVM. Loading and verifying Spark's ~15,000 classes costs it seconds of
CPU at every start, and on a 2-core machine that CPU is taken from the fold itself
(``bench/replay.py``: a 10 M-event fold from a typed Parquet export spent ~8 s of JVM CPU in
class loading). A *dynamic CDS archive* (JDK 13+, JEP 350) holds those classes already parsed
and verified; a JVM started with ``-XX:SharedArchiveFile`` maps it instead.

- :func:`build_archive` runs a short training fold in a child process whose JVM writes the
  archive when it exits (``-XX:ArchiveClassesAtExit``). It is written under a temporary name,
  checked by starting a JVM on it, and renamed into place only then: a truncated archive
  crashes the JVM that maps it (SIGBUS), so a partial file must never carry the final name.
  ``python -m projections.spark_cds`` builds it; ``make test`` and ``make bench`` do so once.
- :func:`archive_java_options` gives :func:`projections.spark_fold.get_spark` the option that
  uses it, when it exists for this JDK and these PySpark jars. An archive the JVM cannot use (a
  different class path) is ignored by the JVM with no effect but the lost speed-up.

The archive lives in ``$SHOAL_SPARK_CDS_DIR`` (default ``~/.cache/shoal``), keyed by the Java
executable, its ``release`` file, the PySpark version and its jars' path, size and modification
time (the JVM ignores an archive when any of them changed, so a new virtualenv builds its own);
building one deletes the archives of virtualenvs that no longer exist. ``SHOAL_SPARK_CDS=off``
turns it off. It is an optimisation only: without it every result is the same.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["archive_java_options", "archive_path", "build_archive"]

_log = logging.getLogger(__name__)
#: set in the training child: the path its JVM writes the archive to when it exits
_DUMP_ENV = "SHOAL_SPARK_CDS_DUMP"
#: silences the JVM's CDS warnings (they would go to the replay's standard output)
_QUIET = "-Xlog:cds=off,cds+dynamic=off"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.realpath(os.path.join(home, "bin", "java"))
    found = shutil.which("java")
    return os.path.realpath(found) if found else None


def archive_path() -> Path | None:
    """Where the archive for this JDK and this virtualenv's PySpark jars lives (whether or not it exists), or
    ``None`` when there is no ``java`` or archives are turned off (``SHOAL_SPARK_CDS=off``)."""
    if os.environ.get("SHOAL_SPARK_CDS", "").lower() in ("off", "0", "false", "no"):
        return None
    java = _java()
    if java is None:
        return None
    import pyspark

    key = hashlib.sha256()
    key.update(java.encode())
    release = Path(java).parent.parent / "release"
    if release.is_file():
        key.update(release.read_bytes())
    key.update(pyspark.__version__.encode())
    # The JVM checks the class path an archive was dumped with, path, size and modification
    # time of every jar, and silently ignores the archive on any difference: a fresh virtualenv
    # (another clone, a reinstall) has the same jar names but new paths and times, so all three
    # go into the key.
    jars = _jars_dir()
    key.update(str(jars).encode())
    if jars.is_dir():
        for jar in sorted(jars.iterdir()):
            st = jar.stat()
            key.update(f"\n{jar.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    base = Path(os.environ.get("SHOAL_SPARK_CDS_DIR") or Path.home() / ".cache" / "shoal")
    return base / f"spark-cds-{pyspark.__version__}-{key.hexdigest()[:16]}.jsa"


def archive_java_options() -> str:
    """The JVM options :func:`projections.spark_fold.get_spark` adds: write the archive at exit
    (in the training child of :func:`build_archive`), use it (when it exists), or nothing."""
    dump = os.environ.get(_DUMP_ENV)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} {_QUIET}"
    path = archive_path()
    if path is not None and path.is_file():
        return f"-XX:SharedArchiveFile={path} {_QUIET}"
    return ""


def build_archive(force: bool = False, timeout_s: float = 600.0) -> Path | None:
    """Build the archive unless it exists (``force``: rebuild). Returns its path, or ``None``
    when archives are off, Java is missing or the training fold failed (logged; Spark then runs
    without an archive). Takes ~1 min on the 2-core machine; the archive is ~190 MB. Raises
    ``OSError`` when the archive directory cannot be written and
    ``subprocess.TimeoutExpired`` when the training fold outlives ``timeout_s``."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    env = dict(os.environ, **{_DUMP_ENV: str(tmp)})
    root = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run(
            [sys.executable, "-m", "projections.spark_cds", "--train"],
            cwd=root, env=env, timeout=timeout_s, capture_output=True, text=True,
        )
        if done.returncode != 0 or not tmp.is_file():
            _log.warning("spark CDS archive not built (exit %s): %s", done.returncode, done.stderr[-2000:])
            return None
        # a JVM that maps a damaged archive dies (SIGBUS): try it before giving it the final name
        check = subprocess.run([_java() or "java", f"-XX:SharedArchiveFile={tmp}", _QUIET, "-version"], capture_output=True, timeout=60)
        if check.returncode != 0:
            _log.warning("spark CDS archive %s failed its check (exit %s)", tmp, check.returncode)
            return None
        os.replace(tmp, path)
        jars = _jars_dir()
        _sidecar(path).write_text(str(jars))
        _prune(path.parent, keep=path, jars=jars)
        return path
    finally:
        tmp.unlink(missing_ok=True)


def _jars_dir() -> Path:
    import pyspark

    return (Path(pyspark.__file__).parent / "jars").resolve()


def _sidecar(archive: Path) -> Path:
    """The file beside ``archive`` naming the PySpark jars directory it was built for."""
    return archive.with_name(archive.name + ".jars")


def _prune(directory: Path, keep: Path, jars: Path) -> None:
    """Delete the archives in ``directory`` (other than ``keep``, just built for ``jars``) whose
    PySpark jars directory (their sidecar file) no longer exists or is ``jars`` itself (a
    reinstall or a new clone at the same path: the JVM would refuse the old archive): each
    virtualenv gets its own ~190 MB archive, and stale ones must not pile up. Archives without a
    sidecar, or built for another jars directory that still exists, are left alone."""
    for other in directory.glob("spark-cds-*.jsa"):
        side = _sidecar(other)
        if other == keep or not side.is_file():
            continue
        try:
            built_for = Path(side.read_text().strip())
            if built_for == jars or not built_for.is_dir():
                other.unlink(missing_ok=True)
                side.unlink(missing_ok=True)
        except OSError as exc:  # another process pruning the same file, a read-only cache: leave it
            _log.info("spark CDS: could not prune %s: %s", other, exc)


def _train() -> None:
    """The training fold (run in the child of :func:`build_archive`): Spark reads a small log
    through JDBC, a raw Parquet export and a typed one, so its JVM loads the classes a replay
    uses; then the JVM is stopped and waited for, so that it writes the archive before this
    process exits."""
    from events.codec import new_event
    from events import share_group as sg
    from projections.model import domain_projections
    from projections.source import export_parquet
    from projections.spark_fold import fold_spark, get_spark, stop_spark
    from store.event_log import ANY, open_event_log

    with tempfile.TemporaryDirectory(prefix="shoal-cds-") as d:
        url = f"sqlite:///{d}/events.db"
        log = open_event_log(url)
        tp = (sg.TopicPartitions("AAAAAAAAAAAAAAAAAAAAAQ", (0, 1)),)
        for g in range(20):
            gid = f"g{g}"
            evs = [
                sg.MemberSubscriptionUpdated(gid, "m1", "client", "/10.0.0.1", None, ("orders",)),
                sg.GroupEpochBumped(gid, 1),
                sg.TargetAssignmentUpdated(gid, 1, (sg.MemberTarget("m1", tp),)),
                sg.MemberAssignmentReconciled(gid, "m1", 1, 0, tp),
                sg.ShareSessionOpened(gid, "m1", tp),
                sg.MemberFenced(gid, "m1", "SESSION_TIMEOUT"),
            ]
            log.append(f"share-group:{gid}", [new_event(e) for e in evs], ANY)
        log.close()
        export_parquet(url, f"{d}/typed")
        export_parquet(url, f"{d}/raw", typed=False)
        spark = get_spark()
        ps = domain_projections()
        for source in (url, f"{d}/typed", f"{d}/raw"):
            fold_spark(source, ps, spark=spark)
        stop_spark()
        # the JVM writes the archive as it exits: end it and wait (it exits when its stdin closes)
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is not None:
            gateway.shutdown()
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=300)


def main() -> None:
    if "--train" in sys.argv:
        _train()
        return
    try:
        path = build_archive(force="--force" in sys.argv)
    except (OSError, subprocess.SubprocessError) as exc:  # an optimisation only: never fail the caller (make)
        _log.warning("spark CDS archive not built: %s", exc)
        path = None
    print(f"spark CDS archive: {path}" if path else "spark CDS archive: not built (see the log above)")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
