"""Fixtures of the integration tests beyond the root's database ones."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.web import (
    TODAY,
    Web,
    clock_on,
    open_web,
    session_for,
    web_settings,
)


@pytest.fixture
async def web(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> AsyncIterator[Web]:
    """The web dashboard on this test's database, its fake clock on ``TODAY`` 09:00 UTC,
    its client signed in as an admin (who sees everything: what the reads show is the
    subject; ``anonymous`` and ``sign_in_as`` are the sign-in's)."""
    async with open_web(pool, web_settings(database_url, tmp_path), clock=clock_on(TODAY)) as w:
        await session_for(w)
        yield w


@pytest.fixture
async def anonymous(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> AsyncIterator[Web]:
    """The web dashboard as ``web``, its client signed in as nobody."""
    async with open_web(pool, web_settings(database_url, tmp_path), clock=clock_on(TODAY)) as w:
        yield w
