"""``db backup`` and ``db restore`` on the embedded PostgreSQL (ADR 0061): no database URL,
so the commands start the server in the home, as on a fresh machine."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from safelight.db.backups import backups_in, folder_of
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Not tmp_path: as root the embedded server runs as another user, who must be able
    to enter the home (as tests/integration/test_embedded.py says)."""
    folder = temporary_folder("safelight-embedded-backup-", homes=True)
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        remove_folder(folder, homes=True)


def test_a_backup_of_the_embedded_database_restores_into_it(scratch: Path) -> None:
    home = scratch / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAFELIGHT_")}
    env["SAFELIGHT_HOME"] = str(home)

    def invoke(*args: str) -> subprocess.CompletedProcess[str]:
        # Real processes: each starts the server in the home and stops it as it exits.
        return subprocess.run(
            [sys.executable, "-m", "safelight", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )

    def roots() -> list[str]:
        listed = invoke("config", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        return sorted(config["root"] for config in json.loads(listed.stdout))

    for name in ("kept", "added-after"):
        (scratch / name).mkdir()
    assert invoke("config", "add", str(scratch / "kept")).returncode == 0
    backed_up = invoke("db", "backup")
    assert backed_up.returncode == 0, backed_up.stderr
    (path,) = backups_in(folder_of(home))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert invoke("config", "add", str(scratch / "added-after")).returncode == 0
    assert len(roots()) == 2

    restored = invoke("db", "restore", str(path))

    assert restored.returncode == 0, restored.stderr
    assert restored.stdout.startswith("restored ")
    assert roots() == [str((scratch / "kept").resolve())]
