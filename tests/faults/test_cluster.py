"""The suite's private cluster runs wherever the checkout is, and opens no folder.

As root (as CI runs) the cluster runs as another OS user, who cannot enter a checkout
under a 0700 folder (a clone in root's home): the tests build such a checkout's venv,
hard-linked file by file from this one, and start the cluster from it. Every check
reads the system (modes, ``/proc``), not the cluster's idea of what it did.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.cluster import CLUSTER_USER, PrivateCluster
from tests.reaper import remove_folder, temporary_folder

pytestmark = [
    pytest.mark.faults,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the cluster runs as another user)"),
]

ROOT = Path(__file__).resolve().parents[2]

# Run by the closed venv's Python: start the cluster, report what the system says about
# it, destroy it.
START_FROM_THE_VENV = """
import json, os, sys
import psycopg
from tests.faults.cluster import PrivateCluster

cluster = PrivateCluster()
try:
    cluster.start()
    with psycopg.connect(cluster.url()) as conn:
        answer = conn.execute("SELECT 1").fetchone()
    pid = cluster.postmaster_pid()
    status = open(f"/proc/{pid}/status").read().splitlines()
    fields = {line.split(":")[0]: line.split(":", 1)[1].split() for line in status}
    print(json.dumps({
        "answer": answer,
        "base": str(cluster.base),
        "exe": os.readlink(f"/proc/{pid}/exe"),
        "uid": fields["Uid"],
        "gid": fields["Gid"],
        "groups": fields["Groups"],
    }))
finally:
    cluster.destroy()
"""


@pytest.fixture
def closed() -> Iterator[Path]:
    """A folder of mode 0700 (mkdtemp's), as root's home is on Debian."""
    folder = temporary_folder("safelight-faults-closed-")  # tied to the session
    try:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        yield folder
    finally:
        remove_folder(folder)


def modes(paths: list[Path]) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in paths}


def test_the_cluster_starts_from_a_venv_in_a_closed_folder_and_opens_none(closed: Path) -> None:
    checkout = closed / "safelight"
    checkout.mkdir(mode=0o700)
    venv = checkout / ".venv"
    # The venv, linked file by file: the same installation, inside a closed folder.
    subprocess.run(["cp", "-al", str(Path(sys.prefix)), str(venv)], check=True)
    temp = Path(tempfile.gettempdir())
    watched = [*venv.parents, venv, *temp.parents, temp]
    before = modes(watched)

    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", START_FROM_THE_VENV],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )

    assert modes(watched) == before
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["answer"] == [1]
    base = Path(seen["base"])
    assert base.parent == temp
    assert not base.exists()  # destroyed, the binaries' copy with it
    # The server ran from a copy of the binaries in the cluster's folder, not the venv's.
    assert Path(seen["exe"]).is_relative_to(base), seen["exe"]
    # As the cluster's user: its own user and group, no supplementary groups.
    account = pwd.getpwnam(CLUSTER_USER)
    assert set(seen["uid"]) == {str(account.pw_uid)}
    assert set(seen["gid"]) == {str(account.pw_gid)}
    assert account.pw_uid != 0 and account.pw_gid != 0
    assert seen["groups"] == []


def test_a_temp_folder_the_server_s_user_cannot_enter_is_named_and_stays_closed(
    closed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watched = [*closed.parents, closed]
    before = modes(watched)
    monkeypatch.setattr(tempfile, "tempdir", str(closed))

    with pytest.raises(RuntimeError) as failure:
        PrivateCluster()

    message = str(failure.value)
    assert f"{CLUSTER_USER}, who cannot enter {closed} (mode 0700)" in message
    assert "set TMPDIR" in message
    assert modes(watched) == before
    assert list(closed.iterdir()) == []  # the cluster's folder is gone again
