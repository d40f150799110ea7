"""The fresh-machine path: no database URL, so safelight starts the embedded PostgreSQL.

This runs in every test run, whichever server the rest of the suite uses. Servers here
are real processes; each test has its own home and stops what it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from safelight.db.database import open_database
from safelight.db.embedded import DATA_FOLDER, EmbeddedDatabaseError, start_embedded, venv_pginstall
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.stores import TEST_KINDS
from safelight.work.store import WorkStore
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Not pytest's tmp_path: pytest resets its base folder to mode 0700 at every session
    start, and as root the embedded server runs as another user, who must be able to
    enter the home (safelight opens no folder for it)."""
    folder = temporary_folder("safelight-embedded-", homes=True)  # tied to the session
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        remove_folder(folder, homes=True)


def postmaster_pid(home: Path) -> int | None:
    try:
        return int((home / DATA_FOLDER / "postmaster.pid").read_text().split()[0])
    except FileNotFoundError:
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too (the server is nobody's child here, but be exact).
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def user_process(home: Path) -> subprocess.Popen[str]:
    """Another process using the server under ``home``: it prints the URL, then waits for
    a line on stdin and exits normally (its handle leaves at exit)."""
    code = (
        "import sys; from pathlib import Path;"
        "from safelight.db.embedded import start_embedded;"
        "url, handle = start_embedded(Path(sys.argv[1]));"
        "print(url, flush=True); sys.stdin.readline()"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("postgresql://"), line
    return process


async def test_embedded_database_starts_migrates_and_persists(scratch: Path) -> None:
    home = scratch / "home"
    clock = FakeClock()
    db = await open_database(None, home)
    try:
        assert db.embedded_handle is not None
        assert (home / DATA_FOLDER / "PG_VERSION").exists()
        store = WorkStore(db.pool, clock, TEST_KINDS, max_stalls=Settings().max_stalls)
        item_id = await store.enqueue("noop", payload={"kept": True})
    finally:
        await db.close()
        db.embedded_handle.cleanup()  # the last handle: the server stops

    # A second start finds the same data: the queue survives a restart.
    db = await open_database(None, home)
    try:
        store = WorkStore(db.pool, clock, TEST_KINDS, max_stalls=Settings().max_stalls)
        item = await store.get(item_id)
        assert item is not None and item.payload == {"kept": True}
    finally:
        await db.close()
        db.embedded_handle.cleanup()


def test_processes_share_the_server_and_the_last_to_leave_stops_it(scratch: Path) -> None:
    home = scratch / "home"
    other = user_process(home)
    try:
        pid = postmaster_pid(home)
        assert pid is not None and alive(pid)
        url, handle = start_embedded(home)  # joins: the same server
        assert postmaster_pid(home) == pid
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        handle.cleanup()
        handle.cleanup()  # twice is harmless
        assert alive(pid), "the server stopped while another process used it"
    finally:
        assert other.stdin is not None
        other.stdin.write("\n")
        other.stdin.close()
        other.wait(timeout=60)
        assert other.stdout is not None
        other.stdout.close()
    assert not alive(pid), "the last process left and the server still runs"
    assert postmaster_pid(home) is None


def test_a_user_killed_with_sigkill_does_not_keep_the_server_running(scratch: Path) -> None:
    home = scratch / "home"
    other = user_process(home)
    other.send_signal(signal.SIGKILL)
    other.wait(timeout=60)
    assert other.stdin is not None and other.stdout is not None
    other.stdin.close()
    other.stdout.close()
    pid = postmaster_pid(home)
    assert pid is not None and alive(pid)  # a killed process stops nothing
    _, handle = start_embedded(home)
    assert postmaster_pid(home) == pid
    handle.cleanup()
    # The killed process's lock died with it: this was the last user.
    assert not alive(pid)


def test_ctrl_c_during_the_start_leaves_nothing_running(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safelight.db import embedded

    home = scratch / "home"
    real_run_as = embedded._run_as
    started: list[int] = []

    def interrupted_after_pg_ctl(
        account: embedded.Account, command: list[str], **kw: float
    ) -> None:
        real_run_as(account, command, **kw)
        if Path(command[0]).name == "pg_ctl":
            pid = postmaster_pid(home)
            assert pid is not None and alive(pid)
            started.append(pid)
            raise KeyboardInterrupt  # as if Ctrl-C came while pg_ctl returned

    monkeypatch.setattr(embedded, "_run_as", interrupted_after_pg_ctl)
    with pytest.raises(KeyboardInterrupt):
        start_embedded(home)
    assert started and not alive(started[0])
    monkeypatch.undo()
    # Nothing is left locked: the next start works, and stops at cleanup.
    url, handle = start_embedded(home)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        handle.cleanup()


def test_a_server_that_cannot_start_is_a_clear_error_naming_its_log(scratch: Path) -> None:
    home = scratch / "home"
    _, handle = start_embedded(home)
    handle.cleanup()
    with open(home / DATA_FOLDER / "postgresql.conf", "a") as conf:
        conf.write("shared_buffers = 'not a size'\n")
    with pytest.raises(EmbeddedDatabaseError) as failure:
        start_embedded(home)
    assert str(home / DATA_FOLDER / "log") in str(failure.value)
    assert postmaster_pid(home) is None


def test_status_names_the_embedded_server_s_version(scratch: Path) -> None:
    home = scratch / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAFELIGHT_")}
    env["SAFELIGHT_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "safelight", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert f"database: embedded PostgreSQL in {home / DATA_FOLDER}" in done.stdout
    # The package's PostgreSQL, a 16.x past the 16.2 of pgserver 0.1.4 (ADR 0037).
    bundled = subprocess.run(
        [str(venv_pginstall() / "bin" / "postgres"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    major, minor = (int(part) for part in bundled.split("."))
    assert major == 16 and minor >= 14, bundled
    assert f"server: PostgreSQL {bundled}\n" in done.stdout
    assert postmaster_pid(home) is None  # the command's exit stopped the server
