"""Debian packages as the book's data sources (``vlp_lib.data.debian``): pinned by version and SHA-256, refused
otherwise, with the commands to run where apt is missing."""

import hashlib

import pytest

from vlp_lib import files
from vlp_lib.data import debian

PACKAGE = debian.Package("some-data", "1:1.0-1", "0" * 64, "python -m some.command")


def test_a_deb_that_is_not_the_pinned_one_is_refused(tmp_path):
    deb = tmp_path / "some-data_1.0-1_all.deb"
    deb.write_bytes(b"not the package")
    with pytest.raises(RuntimeError, match="is not Debian's some-data 1:1.0-1: SHA-256"):
        debian.unpack(PACKAGE, tmp_path / "work", deb)
    assert files.file_sha256(deb) == hashlib.sha256(b"not the package").hexdigest()


def test_without_apt_the_error_names_the_package_and_the_commands(tmp_path, monkeypatch):
    monkeypatch.setattr(debian.shutil, "which", lambda name: None)
    with pytest.raises(
        RuntimeError, match=r"apt-get is not available.*some-data=1:1.0-1.*python -m some.command --deb"
    ):
        debian.unpack(PACKAGE, tmp_path / "work")
