"""A file's identity: the SHA-256 of its bytes (a pinned package, a checkpoint, a release's record), and a data set's:
the digest of its files' contents (``files_digest``: what keys a run on real data)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

# each file's SHA-256 by (path, size, modification time): a data set is read once per process, then only looked at
_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of the bytes of the file at ``path``, read a megabyte at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def files_digest(files: Iterable[str | os.PathLike]) -> str:
    """SHA-256 (hex) of the contents of ``files``, in the order given: a data set's identity, whatever its path. Each
    file is read once per process while its size and modification time stand."""
    h = hashlib.sha256()
    for file in files:
        name = os.path.abspath(file)
        stat = os.stat(name)
        key = (name, stat.st_size, stat.st_mtime_ns)
        if key not in _DIGESTS:
            _DIGESTS[key] = file_sha256(name)
        h.update(_DIGESTS[key].encode())
    return h.hexdigest()
