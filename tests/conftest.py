from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from tests.dbserver import PgTestServer, start_test_server, stop_test_server


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
