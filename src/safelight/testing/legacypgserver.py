"""pgserver 0.1.4 (PostgreSQL 16.2): the embedded server of every release before ADR 0037,
fetched for the tests that open the data folders it made.

The venv no longer holds that package and the repository holds nothing binary, so pip
downloads its wheel, checked against the hashes the lock files held
(``legacypgserver.txt``; 11 MB, about 2 s here), from pip's cache after the first
time, and unpacks it once per session (under a second, 27 MB). Only what the tests run
is unpacked: the package's Python code and its PostgreSQL, without the C headers.

Where the wheel cannot be had (no network and nothing cached, a platform it has no
wheel for), the tests that need it skip, saying why; with
``SAFELIGHT_TEST_LEGACY_PGSERVER=required`` (CI sets it) they fail instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

REQUIREMENT = Path(__file__).with_name("legacypgserver.txt")
VERSION = "16.2"


def fetch_legacy_pgserver(dest: Path) -> Path:
    """Unpack pgserver 0.1.4 into ``dest`` (made readable and traversable by all, so that
    a server user reaches its binaries) and return it: a folder to put on ``sys.path``
    (``import pgserver``) whose ``pgserver/pginstall/bin`` holds PostgreSQL 16.2."""
    with tempfile.TemporaryDirectory(prefix="safelight-legacy-wheel-") as wheels:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "--disable-pip-version-check",
                "-r",
                str(REQUIREMENT),
                "-d",
                wheels,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        found = sorted(Path(wheels).glob("pgserver-0.1.4-*.whl"))
        if done.returncode != 0 or not found:
            reason = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            message = f"pgserver 0.1.4 (PostgreSQL {VERSION}) cannot be had: {reason}"
            if os.environ.get("SAFELIGHT_TEST_LEGACY_PGSERVER") == "required":
                pytest.fail(message)
            pytest.skip(message)
        with zipfile.ZipFile(found[0]) as wheel:
            for member in wheel.infolist():
                if "/pginstall/include/" in member.filename:
                    continue
                path = Path(wheel.extract(member, dest))
                mode = (member.external_attr >> 16) & 0o777
                if mode and not member.is_dir():
                    path.chmod(mode | 0o444)
    for folder, _, _ in os.walk(dest):
        os.chmod(folder, 0o755)
    return dest


def legacy_bin(folder: Path) -> Path:
    return folder / "pgserver" / "pginstall" / "bin"
