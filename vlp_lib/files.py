"""A file's identity: the SHA-256 of its bytes (a pinned package, a checkpoint, a release's record)."""

from __future__ import annotations

import hashlib
import os


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of the bytes of the file at ``path``, read a megabyte at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
