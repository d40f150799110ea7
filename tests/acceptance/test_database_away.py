"""A database that goes away, or is not there yet (issue #27, item 6; ADR 0038).

Real processes: ``safelight run`` on its embedded PostgreSQL, whose postmaster is
killed while the crawl is paused between two photos (a pause point, not a timing), and
``safelight worker`` started while PostgreSQL is still starting (a proxy that answers
as a starting server does, as many times as the test says). The processes' timeouts
only guard against a hang.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import psycopg.errors
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from safelight.cli.exits import EXIT_DATABASE
from safelight.cli.failures import translate
from safelight.cli.state import CliState
from safelight.db.database import Database, DatabaseUnavailable
from safelight.db.embedded import DATA_FOLDER, read_postmaster
from safelight.db.urls import mask_url
from safelight.settings import Settings
from tests.acceptance.harness import PAUSE_POINTS, REPO, paused_at, process_env, safelight_process
from tests.faults.startingup import STARTING_UP, StartingUpProxy
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.acceptance

HANG_GUARD_SECONDS = 60
# Short leases, so that the next run takes back the crawl the killed one held within
# seconds (recovery requeues it once its lease has expired).
SHORT_LEASES = {
    "SAFELIGHT_LEASE_SECONDS": "2",
    "SAFELIGHT_HEARTBEAT_SECONDS": "0.5",
    "SAFELIGHT_RECOVERY_INTERVAL_SECONDS": "0.5",
    "SAFELIGHT_POLL_SECONDS": "0.5",
}


@pytest.fixture
def embedded_home() -> Iterator[Path]:
    # Not pytest's tmp_path: as root the embedded server runs as another user, who must
    # reach its home (see test_processes.test_run_on_the_embedded_database_with_no_url).
    scratch = temporary_folder("safelight-db-away-", homes=True)  # tied to the session
    scratch.chmod(0o711)
    try:
        yield scratch / "home"
    finally:
        _kill_server(scratch / "home" / DATA_FOLDER)
        remove_folder(scratch, homes=True)


def _kill_server(pgdata: Path) -> None:
    from safelight.db.embedded import is_postmaster_of

    running = read_postmaster(pgdata)
    if running is not None and is_postmaster_of(running.pid, pgdata):
        os.kill(running.pid, signal.SIGKILL)


def test_run_exits_3_when_its_embedded_server_dies_and_the_next_run_finishes_the_crawl(
    small_library: Path, embedded_home: Path, fifo: tuple[Path, int]
) -> None:
    path, fd = fifo
    pgdata = embedded_home / DATA_FOLDER
    env = {
        "SAFELIGHT_HOME": str(embedded_home),
        "SAFELIGHT_MAX_CONCURRENT_FILES": "1",  # one photo after the other
        **SHORT_LEASES,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "safelight", "run", str(small_library), "--json"],
        env=process_env(
            {**env, "PYTHONPATH": str(PAUSE_POINTS), "PAUSE_AT": "ingest", "PAUSE_FIFO": str(path)}
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        # The crawl has one photo in the database and is about to add its second.
        assert paused_at(fd, process, HANG_GUARD_SECONDS) == "ingest"
        running = read_postmaster(pgdata)
        assert running is not None
        os.kill(running.pid, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=HANG_GUARD_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 3, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1] == (
        f"safelight: error: the embedded PostgreSQL in {pgdata} stopped while safelight "
        f"was using it (see {pgdata / 'log'}); nothing is lost: the next start of "
        "safelight starts it again and goes on where this one stopped"
    )

    # PostgreSQL's own lock-file check takes a pid that still exists for a running
    # postmaster, a zombie too: the next start waits until init has reaped the killed
    # one (at once under systemd or tini; this test machine's init takes a second).
    _wait_until_reaped(running.pid)

    # The next run starts the server again, takes the crawl back once its lease has
    # expired, and finishes it: the photo the killed run added is kept, not made again.
    again = safelight_process(
        "run", str(small_library), "--json", env=env, timeout=HANG_GUARD_SECONDS
    )
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["status"] == "succeeded"
    assert summary["assets"]["total"] == 3
    assert summary["new"] == 2
    crawls = [i for i in summary["items"] if i["kind"] == "crawl"]
    assert [(i["id"], i["outcome"]) for i in crawls] == [(summary["crawl"]["item_id"], "succeeded")]


def _wait_until_reaped(pid: int) -> None:
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, f"process {pid} was never reaped"
        time.sleep(0.05)


def _through(proxy: StartingUpProxy, database_url: str) -> str:
    params = conninfo_to_dict(database_url)
    params.update(host="127.0.0.1", port=str(proxy.port))
    return make_conninfo("", **params)


def _upstream(database_url: str) -> tuple[str, int]:
    params = conninfo_to_dict(database_url)
    return str(params.get("host") or "127.0.0.1"), int(params.get("port") or 5432)


def test_a_worker_started_while_postgresql_starts_up_waits_then_works(
    database_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO work_items (kind, requested_at) VALUES ('noop', now()) RETURNING id"
        ).fetchone()
    assert row is not None
    proxy = StartingUpProxy(*_upstream(database_url), refusals=3)
    try:
        done = safelight_process(
            "worker",
            "--until-idle",
            env={
                "SAFELIGHT_HOME": str(tmp_path),
                "SAFELIGHT_DATABASE_URL": _through(proxy, database_url),
                "SAFELIGHT_POLL_SECONDS": "0.1",
            },
            timeout=HANG_GUARD_SECONDS,
        )
    finally:
        proxy.close()
    assert done.returncode == 0, done.stderr
    assert proxy.refused == 3
    # One line a try, each wait twice the last, from poll_seconds.
    waits = [line for line in done.stderr.splitlines() if STARTING_UP in line]
    assert [line.rsplit("; ", 1)[1] for line in waits] == [
        "trying again in 0.1 s",
        "trying again in 0.2 s",
        "trying again in 0.4 s",
    ]
    assert all(f"port {proxy.port}" in line and "WARNING" in line for line in waits)
    with psycopg.connect(database_url) as conn:
        status = conn.execute("SELECT status::text FROM work_items WHERE id = %s", (row[0],))
        assert status.fetchone() == ("succeeded",)


def test_a_worker_pointed_at_a_database_that_does_not_exist_exits_3_at_once(
    database_url: str, tmp_path: Path
) -> None:
    missing = make_conninfo(database_url, dbname="safelight_no_such_database")
    done = safelight_process(
        "worker",
        env={"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": missing},
        timeout=HANG_GUARD_SECONDS,
    )
    assert done.returncode == 3, done.stderr
    assert "trying again" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("safelight: error: cannot reach the database")
    assert 'database "safelight_no_such_database" does not exist' in done.stderr


# --- a database lost under any command ----------------------------------------------------


def _state(database_url: str, home: Path) -> CliState:
    return CliState(overrides={"database_url": database_url, "home": home})


def test_a_database_lost_during_a_command_is_exit_3_naming_it(
    database_url: str, home: Path
) -> None:
    """Its connection ended by the server (as a restart or a killed server ends it): the
    command says it lost the database, for exit 3, not an internal error (70)."""

    async def body(database: Database, settings: Settings) -> None:
        async with database.pool.connection() as conn:
            await conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    with pytest.raises(DatabaseUnavailable) as raised:
        _state(database_url, home).with_database(body)
    assert str(raised.value) == (
        f"lost the database at {mask_url(database_url)}: "
        "terminating connection due to administrator command"
    )
    assert translate(raised.value).exit_code == EXIT_DATABASE


def test_a_statement_the_database_refuses_is_not_a_lost_database(
    database_url: str, home: Path
) -> None:
    async def body(database: Database, settings: Settings) -> None:
        async with database.pool.connection() as conn:
            await conn.execute("SET statement_timeout = 1")
            await conn.execute("SELECT pg_sleep(1)")

    with pytest.raises(psycopg.errors.QueryCanceled):
        _state(database_url, home).with_database(body)
