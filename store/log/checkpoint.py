"""Checkpoint files of a partition directory (Kafka ``CheckpointFile``: a version line, a count
line, then one entry per line), written atomically: ``<path>.tmp`` + fsync + rename + directory fsync.
Used for ``leader-epoch-checkpoint`` and Shoal's ``partition-metadata.checkpoint``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write", "fsync_dir", "read_checkpoint"]


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via ``<path>.tmp`` + fsync + rename + directory fsync."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """fsync the directory ``path`` (makes a create, rename or unlink in it durable). Raises ``OSError``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_checkpoint(path: Path) -> list[list[str]]:
    """Parse Kafka's checkpoint text format (version line, count line, entries); returns the
    entry lines split on whitespace, or [] when the file is absent or malformed."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    if len(lines) < 2 or lines[0].strip() != "0":
        return []
    try:
        n = int(lines[1])
    except ValueError:
        return []
    entries = [ln.split() for ln in lines[2 : 2 + n]]
    return entries if len(entries) == n else []
