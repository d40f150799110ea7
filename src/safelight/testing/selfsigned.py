"""A self-signed certificate made for a test by ``openssl`` (no Python package makes
one here, and none is added for tests): for ``nas.example`` and 127.0.0.1, valid two
days. Without ``openssl`` on PATH the tests that need it skip, saying so."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

NAME = "nas.example"


@dataclass(frozen=True, slots=True)
class Certificate:
    cert: Path
    key: Path


def openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        pytest.skip("openssl is not on PATH: it makes the tests' self-signed certificates")
    return found


def make_certificate(folder: Path, name: str = NAME) -> Certificate:
    """A certificate for ``name`` and 127.0.0.1, and its unencrypted key (mode 0600)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = Certificate(folder / f"{name}.crt", folder / f"{name}.key")
    subprocess.run(
        [
            openssl(),
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            str(made.key),
            "-out",
            str(made.cert),
            "-days",
            "2",
            "-subj",
            f"/CN={name}",
            "-addext",
            f"subjectAltName=DNS:{name},IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    made.key.chmod(0o600)
    return made


def encrypt_key(key: Path, into: Path) -> Path:
    """``key`` under a passphrase, as a key that asks for one at start."""
    subprocess.run(
        [
            openssl(),
            "pkey",
            "-in",
            str(key),
            "-aes256",
            "-passout",
            "pass:phrase",
            "-out",
            str(into),
        ],
        check=True,
        capture_output=True,
    )
    return into
