"""The PostgreSQL the tests run on, and a database per test cloned from a template.

``SAFELIGHT_TEST_DATABASE_URL`` (or ``SAFELIGHT_DATABASE_URL``) names a server to use;
without one, the tests start the embedded PostgreSQL in a temporary folder, exactly as
safelight does on a fresh machine.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from safelight.db.embedded import start_embedded
from safelight.db.migrate import migrate
from safelight.db.pool import connect, with_database
from safelight.testing.serverusers import remove_users_of_gone_homes
from tests.reaper import reaper


@dataclass
class PgTestServer:
    admin_url: str
    embedded: bool
    handle: Any = None
    home: Path | None = None
    template: str = ""
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    def new_database(self) -> tuple[str, str]:
        name = f"safelight_t{os.getpid()}_{next(self._counter)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        return name, with_database(self.admin_url, name)

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_test_server() -> PgTestServer:
    url = os.environ.get("SAFELIGHT_TEST_DATABASE_URL") or os.environ.get("SAFELIGHT_DATABASE_URL")
    if url:
        server = PgTestServer(admin_url=url, embedded=False)
    else:
        home = Path(tempfile.mkdtemp(prefix="safelight-test-"))
        # mkdtemp makes it 0700; as root the server runs as its own user, who must enter
        # the home (safelight never opens a folder for it).
        home.chmod(0o711)
        _tie_to_session(home)
        embedded_url, handle = start_embedded(home)
        server = PgTestServer(admin_url=embedded_url, embedded=True, handle=handle, home=home)
    server.template = f"safelight_tpl_{os.getpid()}"
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{server.template}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{server.template}"')

    async def _migrate() -> None:
        conn = await connect(with_database(server.admin_url, server.template))
        try:
            await migrate(conn)
        finally:
            await conn.close()

    asyncio.run(_migrate())
    return server


def stop_test_server(server: PgTestServer) -> None:
    server.drop_database(server.template)
    if server.handle is not None:
        server.handle.cleanup()
    if server.home is not None:
        # The home and, as root, its server's user (ADR 0037) go with the session.
        shutil.rmtree(server.home, ignore_errors=True)
        remove_users_of_gone_homes(server.home)
        _untie(server.home)


def _tie_to_session(home: Path) -> None:
    """The embedded server (daemonised by pg_ctl: no child of ours) and its home go
    with this process even if it is killed (tests/reaper.py, ADR 0049)."""
    reaper().folder(home, home=True)
    reaper().server(home / "pgdata")


def _untie(home: Path) -> None:
    reaper().server(home / "pgdata", forget=True)
    reaper().folder(home, home=True, forget=True)
