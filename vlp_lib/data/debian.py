"""Debian packages as data sources, fetched at install time without root: ``apt-get download`` of a pinned version,
its SHA-256 checked, unpacked with ``dpkg-deb -x``. The book's real inputs that no PyPI distribution carries come
this way (Open Clip Art's drawings, ``openclipart-svg``); nothing here runs at run time, and a machine without apt
takes a ``.deb`` downloaded elsewhere (``deb=``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vlp_lib.files import file_sha256


@dataclass(frozen=True)
class Package:
    """A pinned Debian package: ``name``, ``version`` (as ``apt-get download name=version`` takes it) and the
    SHA-256 of its ``.deb``; ``command``: the book's command that installs what is made of it (named in errors)."""

    name: str
    version: str
    sha256: str
    command: str


def _run(command: list[str], cwd: Path, package: Package) -> None:
    if shutil.which(command[0]) is None:
        raise RuntimeError(
            f"{command[0]} is not available: this comes from Debian's {package.name} {package.version} "
            f"(`apt-get download {package.name}={package.version}`, then `dpkg-deb -x {package.name}_*.deb DIR`); "
            f"on another system download the .deb and run `{package.command} --deb PATH`"
        )
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"`{' '.join(command)}` failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def unpack(package: Package, work: Path, deb: str | os.PathLike | None = None) -> Path:
    """``package`` unpacked under ``work/root`` (returned): ``deb`` (a downloaded ``.deb``) or the one ``apt-get
    download`` fetches into ``work``. ``RuntimeError`` naming the package and the commands when apt-get or dpkg-deb
    fails or the ``.deb`` is not the pinned one (its SHA-256)."""
    work.mkdir(parents=True, exist_ok=True)
    if deb is None:
        _run(["apt-get", "download", f"{package.name}={package.version}"], work, package)
        debs = sorted(work.glob(f"{package.name}_*.deb"))
        if not debs:
            raise RuntimeError(f"apt-get download {package.name} left no {package.name}_*.deb in {work}")
        deb = debs[0]
    digest = file_sha256(deb)
    if digest != package.sha256:
        raise RuntimeError(
            f"{deb} is not Debian's {package.name} {package.version}: SHA-256 {digest}, expected {package.sha256}"
        )
    root = work / "root"
    _run(["dpkg-deb", "-x", str(Path(deb).resolve()), str(root)], work, package)
    return root
