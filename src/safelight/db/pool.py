"""Connection pools. Every connection is in autocommit: a transaction is always explicit."""

from __future__ import annotations

from typing import Any

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
    params["application_name"] = application_name
    return make_conninfo("", **params)


async def open_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 8,
    application_name: str = "safelight",
) -> AsyncConnectionPool[AsyncConnection[Any]]:  # pragma: no mutate block
    pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
        application_conninfo(url, application_name),
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True},
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
