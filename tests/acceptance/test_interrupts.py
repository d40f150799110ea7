"""Ctrl-C at any moment of a command's start ends it with one line and exit 130, never
with a traceback: in the imports, in parsing, while the settings are read, during the
embedded server's first initdb, while the database is connected to, migrated and its
pool opened, and while the Workers check their roots.

Each point is reached for certain, not by timing: the process runs with the pause
points of ``pausepoints/sitecustomize.py`` on its path, stops at the one named, says so
through a FIFO, and only then gets its SIGINT.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safelight.db.embedded import DATA_FOLDER
from tests.acceptance.harness import PAUSE_POINTS, REPO, paused_at, process_env
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.acceptance

WAIT_SECONDS = 60


def interrupt_at(
    point: str, args: tuple[str, ...], env: dict[str, str], fifo: tuple[Path, int]
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``safelight ARGS`` until it is paused at ``point``, send it SIGINT, and wait
    for it to end. Returns how it ended and the line the pause point wrote."""
    path, fd = fifo
    process = subprocess.Popen(
        [sys.executable, "-m", "safelight", *args],
        env=process_env(
            {**env, "PYTHONPATH": str(PAUSE_POINTS), "PAUSE_AT": point, "PAUSE_FIFO": str(path)}
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        said = paused_at(fd, process, WAIT_SECONDS)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=WAIT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), said


def assert_interrupted(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr == "safelight: interrupted\n", done.stderr
    assert done.returncode == 130
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("point", "args"),
    [
        # `status` no longer imports the engine (ADR 0063); `run` does, on use.
        ("import", ("run", "LIBRARY", "--json")),
        ("parse", ("status",)),
        ("settings", ("status",)),
        ("connect", ("items",)),
        ("migrate", ("db", "migrate")),
        ("migrate", ("enqueue", "noop")),
        ("pool", ("status",)),
        ("roots", ("worker", "--until-idle")),
        ("roots", ("run", "LIBRARY", "--json")),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_ctrl_c_at_a_point_of_the_start_is_one_line_and_exit_130(
    point: str,
    args: tuple[str, ...],
    database_url: str,
    tmp_path: Path,
    fifo: tuple[Path, int],
) -> None:
    library = tmp_path / "library"
    library.mkdir()
    args = tuple(str(library) if a == "LIBRARY" else a for a in args)
    env = {"SAFELIGHT_HOME": str(tmp_path / "home"), "SAFELIGHT_DATABASE_URL": database_url}
    done, said = interrupt_at(point, args, env, fifo)
    assert said == point
    assert_interrupted(done)


def test_ctrl_c_during_the_first_initdb_leaves_nothing_half_made(
    fifo: tuple[Path, int],
) -> None:
    """The embedded server's initdb is killed with all it started, its half data folder
    removed, and the next start makes a whole one."""
    # Not pytest's tmp_path: as root the embedded server runs as another user, who must
    # be able to reach its home (see test_processes.test_run_on_the_embedded_database).
    scratch = temporary_folder("safelight-initdb-", homes=True)  # tied to the session
    scratch.chmod(0o711)
    home = scratch / "home"
    env = {"SAFELIGHT_HOME": str(home)}
    try:
        done, said = interrupt_at("initdb", ("db", "migrate"), env, fifo)
        assert said.startswith("initdb ")
        assert_interrupted(done)
        fake = int(said.split()[1])
        with pytest.raises(ProcessLookupError):
            os.kill(fake, 0)  # killed, and reaped
        assert not (home / DATA_FOLDER).exists()
        assert sorted(p.name for p in home.iterdir() if p.name.startswith(f".{DATA_FOLDER}")) == []

        again = subprocess.run(
            [sys.executable, "-m", "safelight", "db", "migrate"],
            env=process_env(env),
            capture_output=True,
            text=True,
            timeout=180,
            cwd=REPO,
            check=False,
        )
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith("applied ")
        assert (home / DATA_FOLDER / "PG_VERSION").read_text().strip().isdigit()

        # Ctrl-C while connecting to the running embedded server: it stops all the same.
        done, said = interrupt_at("connect", ("status",), env, fifo)
        assert said == "connect"
        assert_interrupted(done)
        _assert_stops(home / DATA_FOLDER / "postmaster.pid")
    finally:
        _stop_server(home / DATA_FOLDER)
        remove_folder(scratch, homes=True)


def _assert_stops(pid_file: Path) -> None:
    """The embedded server stops once its last user has gone."""
    deadline = time.monotonic() + 30
    while pid_file.exists():
        assert time.monotonic() < deadline, "the embedded PostgreSQL is still running"
        time.sleep(0.05)


def _stop_server(pgdata: Path) -> None:
    """A failed test's server: stopped by the code that stops it in production."""
    from safelight.db.embedded import is_postmaster_of, read_postmaster, stop_postmaster

    running = read_postmaster(pgdata)
    if running is not None and is_postmaster_of(running.pid, pgdata):
        with contextlib.suppress(Exception):
            stop_postmaster(running.pid, pgdata)
