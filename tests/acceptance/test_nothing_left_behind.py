"""A test process that is killed leaves nothing behind (issue #29, ADR 0049): the
embedded PostgreSQL it started (daemonised by pg_ctl, so no child of it), a Worker it
started in a process group of its own, and its folders all go with it, through the
reaper every test process has (``tests/reaper.py``). Shown for SIGKILL, which no
handler sees, and for SIGTERM, which is what ``kill`` and CI send."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safelight.db.embedded import read_postmaster
from tests.acceptance.harness import REPO
from tests.faults.processes import wait_for
from tests.reaper import group_members

pytestmark = pytest.mark.acceptance


def _alive(pid: int) -> bool:
    """The process exists and is no zombie (a zombie has ended; its parent reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rindex(")") + 2 :].startswith("Z")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _first_line(process: subprocess.Popen[str], seconds: float) -> str:
    """The session's report line; fails if it ended first or within ``seconds`` (a
    guard against a hang: the embedded server's first start runs initdb)."""
    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the session never said what it started"
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            return process.stdout.readline()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_session_leaves_no_process_and_no_folder(sig: signal.Signals) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SAFELIGHT_TEST_DATABASE_URL", "SAFELIGHT_DATABASE_URL")
    }
    with subprocess.Popen(
        [sys.executable, "-m", "tests.acceptance.abandoned_session"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    ) as session:
        try:
            _kill_and_look(session, sig)
        finally:
            if session.poll() is None:
                session.kill()


def _kill_and_look(session: subprocess.Popen[str], sig: signal.Signals) -> None:
    started = json.loads(_first_line(session, 300))
    worker_log = Path(started["worker_log"])
    wait_for(
        "the Worker to serve",
        lambda: "worker(s) abandoned serving" in worker_log.read_text(errors="replace"),
        120,
    )
    postmaster = read_postmaster(Path(started["pgdata"]))
    assert postmaster is not None
    server = [postmaster.pid, *_children(postmaster.pid)]
    worker = [started["worker"], *group_members(started["worker"])]
    processes = [*server, *worker, started["reaper"]]
    folders = [Path(started["home"]), Path(started["folder"])]
    assert all(_alive(pid) for pid in processes)
    assert all(folder.is_dir() for folder in folders)

    session.send_signal(sig)
    assert session.wait(timeout=30) == -sig

    def gone() -> bool:
        return not any(_alive(pid) for pid in processes) and not any(
            folder.exists() for folder in folders
        )

    wait_for("every process and folder of the session to be gone", gone, 60)
