"""Opening safelight's database: the configured server, or the embedded one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from safelight.db.availability import is_transient
from safelight.db.embedded import start_embedded
from safelight.db.migrate import check_schema, migrate
from safelight.db.pool import connect, open_pool
from safelight.db.urls import mask_url


class DatabaseUnavailable(RuntimeError):
    """The database cannot be reached; the message is safe to print (no password).

    ``transient``: the failure may pass by waiting (``db.availability``), as while the
    server is still starting."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass
class Database:
    url: str
    pool: AsyncConnectionPool[AsyncConnection[Any]]
    # Keeps the embedded server alive while this process uses it.
    embedded_handle: Any = None

    @property
    def display(self) -> str:
        return mask_url(self.url)

    async def close(self) -> None:
        await self.pool.close()


def resolve_url(database_url: str | None, home: Path) -> tuple[str, Any]:
    """The URL to use, and the embedded server's handle when safelight started one.

    Blocking (the embedded server's first start runs ``initdb``): a command calls it
    before its event loop, where a Ctrl-C interrupts it at once; inside the loop the
    signal would only cancel the task, once the start had finished.
    """
    if database_url:
        return database_url, None
    return start_embedded(home)


async def open_database(
    database_url: str | None,
    home: Path,
    *,
    run_migrations: bool = True,
    max_size: int = 8,
    application_name: str = "safelight",
    idle_in_transaction_seconds: float | None = None,
    resolved: tuple[str, Any] | None = None,
) -> Database:  # pragma: no mutate block
    """Open the database, migrated unless ``run_migrations`` is false. Either way a
    database whose migrations are not this release's raises
    :class:`~safelight.db.migrate.SchemaError` before the pool opens.

    ``resolved``: what :func:`resolve_url` returned for these settings, when the caller
    called it already (before its event loop); else it is called here."""
    url, handle = resolved if resolved is not None else resolve_url(database_url, home)
    try:
        conn = await connect(url, application_name)
        try:
            await (migrate(conn) if run_migrations else check_schema(conn))
        finally:
            await conn.close()
        pool = await open_pool(
            url,
            max_size=max_size,
            application_name=application_name,
            idle_in_transaction_seconds=idle_in_transaction_seconds,
        )
    except (psycopg.OperationalError, TimeoutError) as exc:
        # psycopg's message can quote the connection string; never print it raw.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailable(
            f"cannot reach the database at {mask_url(url)}: {mask_url(reason)}",
            transient=is_transient(exc),
        ) from None
    except Exception:
        if handle is not None:
            handle.cleanup()
        raise
    return Database(url=url, pool=pool, embedded_handle=handle)
