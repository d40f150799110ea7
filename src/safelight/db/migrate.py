"""Plain SQL migrations, applied in order, each once, under an advisory lock.

The lock makes two processes starting together take turns: the second finds the
migrations applied and does nothing. Each file runs in its own transaction together
with the row that records it, so a failed migration leaves no trace.

The row records the file's sha256, and every open checks what the database recorded
against the files of this release (:func:`verify`): a migration this release does not
know means a newer release migrated the database, and this one could write rows that
newer schema forbids; a recorded migration whose file changed means the schema is not
the one this release's files describe. Either is refused before anything runs.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from psycopg.rows import dict_row

from safelight import __version__
from safelight.core.sql import load_queries

_log = logging.getLogger(__name__)

QUERIES = load_queries("safelight.db", "migrate.sql")

# A fixed key for pg_advisory_lock: "safelight migrate" as an arbitrary 63-bit number.
MIGRATION_LOCK_KEY = 0x5AFE_0001_D1CE

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# How much of a checksum an error shows: enough to compare by eye.
_SHOWN_CHECKSUM = 12


class SchemaError(RuntimeError):
    """The database's migrations are not this release's; the message says which and
    what to do, and is safe to print."""


class NewerSchemaError(SchemaError):
    """The database holds migrations this release does not know."""


class ChangedMigrationError(SchemaError):
    """A migration the database recorded differs from this release's file."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: str
    name: str
    sql: str
    checksum: str  # sha256 of the file, hex


@dataclass(frozen=True, slots=True)
class AppliedMigration:
    """A row of ``schema_migrations``; ``checksum`` None: applied before they were kept."""

    version: str
    name: str
    checksum: str | None


def checksum_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def available_migrations() -> list[Migration]:
    folder = resources.files("safelight.db") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            data = entry.read_bytes()
            found.append(
                Migration(match.group(1), entry.name, data.decode("utf-8"), checksum_of(data))
            )
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a version: {versions}")
    return found


def verify(applied: Iterable[AppliedMigration], known: Sequence[Migration]) -> None:
    """Raise if the database recorded a migration ``known`` lacks (by version and name),
    or one whose recorded checksum is not its file's. A missing checksum passes: it
    is backfilled as the file is now."""
    by_version = {m.version: m for m in known}
    unknown: list[AppliedMigration] = []
    changed: list[tuple[AppliedMigration, Migration]] = []
    for row in applied:
        migration = by_version.get(row.version)
        if migration is None or migration.name != row.name:
            unknown.append(row)
        elif row.checksum is not None and row.checksum != migration.checksum:
            changed.append((row, migration))
    if unknown:
        names = ", ".join(row.name for row in unknown)
        raise NewerSchemaError(
            f"the database has migrations this safelight ({__version__}) does not know: "
            f"{names}; it was migrated by a newer release: upgrade safelight"
        )
    if changed:
        details = ", ".join(
            f"{row.name} (recorded sha256 {row.checksum[:_SHOWN_CHECKSUM]}…, "
            f"file {migration.checksum[:_SHOWN_CHECKSUM]}…)"
            for row, migration in changed
            if row.checksum is not None
        )
        raise ChangedMigrationError(
            f"migrations changed since they were applied to the database: {details}; "
            "an applied migration must never change: reinstall safelight, or restore the "
            "file and put the change in a new migration"
        )


async def applied_migrations(conn: psycopg.AsyncConnection[Any]) -> list[AppliedMigration]:
    """What the database recorded; empty when it was never migrated."""
    cur = await conn.execute(QUERIES["migrations_table_exists"])
    row = await cur.fetchone()
    if row is None or not row[0]:
        return []
    async with conn.cursor(row_factory=dict_row) as rows:
        await rows.execute(QUERIES["migrations_applied"])
        return [AppliedMigration(**r) for r in await rows.fetchall()]


async def check_schema(conn: psycopg.AsyncConnection[Any]) -> None:  # pragma: no mutate block
    """Raise :class:`SchemaError` if the database's migrations are not this release's.
    Reads only: for a process that opens the database without migrating it."""
    verify(await applied_migrations(conn), available_migrations())


async def migrate(conn: psycopg.AsyncConnection[Any]) -> list[str]:  # pragma: no mutate block
    """Apply every migration not yet applied; return the names applied now.

    Refuses (:class:`SchemaError`, nothing changed) a database with migrations this
    release does not know or whose files changed; records the checksums of migrations
    applied before checksums were kept. ``conn`` must be in autocommit mode: the lock
    is a session lock, and each migration gets its own transaction.
    """
    if not conn.autocommit:
        raise ValueError("migrate() needs a connection in autocommit mode")
    applied_now: list[str] = []
    await conn.execute(QUERIES["migrations_lock"], {"key": MIGRATION_LOCK_KEY})
    try:
        known = available_migrations()
        applied = await applied_migrations(conn)
        # Checked before the table is touched: a newer schema is left exactly as it is.
        verify(applied, known)
        await conn.execute(QUERIES["migrations_table_create"])
        await conn.execute(QUERIES["migrations_checksum_add"])
        by_version = {m.version: m for m in known}
        backfilled = [row.name for row in applied if row.checksum is None]
        for row in applied:
            if row.checksum is None:
                await conn.execute(
                    QUERIES["migration_checksum_backfill"],
                    {"version": row.version, "checksum": by_version[row.version].checksum},
                )
        if backfilled:
            _log.info("recorded the checksums of %s", ", ".join(backfilled))
        done = {row.version for row in applied}
        for migration in known:
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql.encode())
                await conn.execute(
                    QUERIES["migration_record"],
                    {
                        "version": migration.version,
                        "name": migration.name,
                        "checksum": migration.checksum,
                    },
                )
            applied_now.append(migration.name)
    finally:
        await conn.execute(QUERIES["migrations_unlock"], {"key": MIGRATION_LOCK_KEY})
    return applied_now


async def replay(conn: psycopg.AsyncConnection[Any], migrations: Sequence[Migration]) -> None:
    """Apply ``migrations`` in order, each recorded, in the caller's transaction, with no
    lock of its own: for a restore (``db.backup``), which holds migrate's lock and
    applies them to a schema it has just emptied, all or nothing."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
        raise ValueError("replay() runs in the caller's transaction")
    await conn.execute(QUERIES["migrations_table_create"])
    for migration in migrations:
        await conn.execute(migration.sql.encode())
        await conn.execute(
            QUERIES["migration_record"],
            {"version": migration.version, "name": migration.name, "checksum": migration.checksum},
        )
