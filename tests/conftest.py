from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.testing.serverusers import remove_users_of_gone_homes
from tests.dbserver import PgTestServer, start_test_server, stop_test_server


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """As root, every home a test started the embedded server in made an OS user (ADR
    0037): remove those of the temporary homes that are gone (the CLI's, in acceptance
    tests, as well as the fixtures')."""
    remove_users_of_gone_homes(Path(tempfile.gettempdir()))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgTestServer]:
    server = start_test_server()
    try:
        yield server
    finally:
        stop_test_server(server)


@pytest.fixture
def database_url(pg_server: PgTestServer) -> Iterator[str]:
    """A fresh, migrated database of this test's own."""
    name, url = pg_server.new_database()
    try:
        yield url
    finally:
        pg_server.drop_database(name)


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[AsyncConnectionPool[Any]]:
    p = await open_pool(database_url, min_size=1, max_size=12)
    try:
        yield p
    finally:
        await p.close()
