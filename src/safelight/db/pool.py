"""Connection pools. Every connection is in autocommit: a transaction is always explicit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

# How long a new connection may take before the attempt counts as failed. A Worker cut
# off from the database must not hang for minutes on a connect: the executor also
# bounds each call on its own clock, but a short connect timeout frees pool slots.
CONNECT_TIMEOUT_SECONDS = 5


def with_database(url: str, dbname: str) -> str:
    """The same server as ``url``, another database."""
    return make_conninfo(url, dbname=dbname)


def application_conninfo(url: str, application_name: str) -> str:
    params = conninfo_to_dict(url)
    params.setdefault("connect_timeout", str(CONNECT_TIMEOUT_SECONDS))
    # A peer that vanished without closing (a cut cable, a frozen NAS) is noticed by
    # TCP keepalives in about 25 s instead of the kernel's two hours (libpq ignores
    # these on a Unix socket).
    params.setdefault("keepalives", "1")
    params.setdefault("keepalives_idle", "10")
    params.setdefault("keepalives_interval", "5")
    params.setdefault("keepalives_count", "3")
    params["application_name"] = application_name
    return make_conninfo("", **params)


async def open_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 8,
    application_name: str = "safelight",
    idle_in_transaction_seconds: float | None = None,
) -> AsyncConnectionPool[AsyncConnection[Any]]:  # pragma: no mutate block
    """A pool of autocommit connections.

    ``idle_in_transaction_seconds`` makes the server end a session that sits in an open
    transaction that long. A Worker cut off inside a fenced transaction holds its item's
    row lock, and lease recovery skips locked rows; without this the config would stay
    blocked until the server noticed the dead connection.
    """

    async def configure(conn: AsyncConnection[Any]) -> None:
        if idle_in_transaction_seconds is not None:
            await conn.execute(
                "SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
                (str(max(1, round(idle_in_transaction_seconds * 1000))),),
            )

    pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
        application_conninfo(url, application_name),
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True},
        configure=configure,
        open=False,
        timeout=30,
    )
    await pool.open(wait=True, timeout=30)
    return pool


async def connect(
    url: str, application_name: str = "safelight"
) -> AsyncConnection[Any]:  # pragma: no mutate block
    return await AsyncConnection.connect(
        application_conninfo(url, application_name), autocommit=True
    )


class Connections(Protocol):
    """What lends connections: a pool, or :class:`OneConnection`."""

    def connection(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]: ...


class OneConnection:
    """A single connection of its own that stands in for a pool (``connection()``), for
    a reader that must never take one of the Workers' (the metrics port's scrapes).

    Made on first use, one user at a time; a use that fails or is cancelled (a timeout
    abandoned it) drops it, and the next use connects afresh: a connection cut off
    mid-query is never reused.
    """

    def __init__(self, url: str, application_name: str) -> None:
        self._url = url
        self._application_name = application_name
        self._conn: AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        async with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = await connect(self._url, self._application_name)
            try:
                yield self._conn
            except BaseException:
                await self._drop()
                raise

    async def close(self) -> None:
        await self._drop()

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
