"""A private PostgreSQL cluster for the fault-injection suite, which it may restart.

Built from the ``pgserver`` package's binaries (``initdb``, ``pg_ctl``), in a temporary
folder of its own, listening on a free TCP port of 127.0.0.1 and on no Unix socket. The
machine's own PostgreSQL is never touched. PostgreSQL refuses to run as root; as root,
the cluster runs as the ``pgserver`` user, as ``pgserver`` itself does
(``pgserver.postgres_server.PostgresServer``), so its folder sits outside pytest's temp
base (which pytest may reset to 0700 under another user).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from safelight.db.migrate import migrate
from safelight.db.pool import connect

PG_USER = "pgserver"
"""The system user the cluster runs as when the tests run as root."""


def pg_bin() -> Path:
    """The binaries the ``pgserver`` package ships (found without importing it: its
    import warns about XDG_RUNTIME_DIR, and warnings are errors in the tests)."""
    spec = importlib.util.find_spec("pgserver")
    assert spec is not None and spec.submodule_search_locations, "pgserver is not installed"
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def ensure_user(name: str) -> None:
    """The system user exists (as ``pgserver.utils.ensure_user_exists`` makes it)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", name], check=True, capture_output=True)


def open_prefix(path: Path) -> None:
    """Every folder above ``path`` can be traversed by other users (the server's)."""
    for folder in path.parents:
        mode = folder.stat().st_mode
        if mode & 0o055 != 0o055:
            folder.chmod(mode | 0o055)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateCluster:
    """``start()`` once, ``restart()`` as a fault, ``destroy()`` always (in a finally)."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="safelight-faults-pg-"))
        self.base.chmod(0o755)
        self.pgdata = self.base / "pgdata"
        self.log = self.base / "postgres.log"
        self.port = free_port()
        self.restarts = 0
        self._system_user: str | None = None
        if os.geteuid() == 0:
            ensure_user(PG_USER)
            open_prefix(self.base)
            self._system_user = PG_USER

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """Create and migrate database ``name``; its URL (TCP, 127.0.0.1)."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        url = self.url(name)

        async def migrated() -> None:
            conn = await connect(url)
            try:
                await migrate(conn)
            finally:
                await conn.close()

        asyncio.run(migrated())
        return url

    # --- life cycle ------------------------------------------------------------------

    def start(self) -> None:
        if not (self.pgdata / "PG_VERSION").exists():
            self.pgdata.mkdir(mode=0o700)
            self.log.touch()
            if self._system_user is not None:
                entry = pwd.getpwnam(self._system_user)
                for path in (self.pgdata, self.log):
                    os.chown(path, entry.pw_uid, entry.pw_gid)
            self._run(
                "initdb",
                "-D",
                str(self.pgdata),
                "--auth=trust",
                "--encoding=utf8",
                "-U",
                "postgres",
                "--no-sync",
            )
            with (self.pgdata / "postgresql.auto.conf").open("a") as conf:
                conf.write(
                    f"listen_addresses = '127.0.0.1'\nport = {self.port}\n"
                    "unix_socket_directories = ''\nmax_connections = 300\n"
                    "shared_buffers = 64MB\nlog_min_messages = warning\n"
                )
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.log), "-w", "-t", "60", "start")
        self.wait_ready()

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (clients disconnected, clean) or ``immediate``
        (as if the machine lost power, crash recovery at the next start)."""
        self._run("pg_ctl", "-D", str(self.pgdata), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()
        self.restarts += 1

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url(), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.pgdata / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def destroy(self) -> None:
        """Stop the server whatever state it is in, and delete its folder."""
        pid = self.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self.stop("immediate")
            # pg_ctl failed or timed out: the postmaster we started, by its own pid.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.base, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(pg_bin() / program), *args],
            user=self._system_user,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            cwd=self.base,
            check=False,
        )
        if done.returncode != 0:
            tail = self.log.read_text()[-3000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{tail}"
            )
