"""Plain SQL migrations, applied in order, each once, under an advisory lock.

The lock makes two processes starting together take turns: the second finds the
migrations applied and does nothing. Each file runs in its own transaction together
with the row that records it, so a failed migration leaves no trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg

# A fixed key for pg_advisory_lock: "safelight migrate" as an arbitrary 63-bit number.
MIGRATION_LOCK_KEY = 0x5AFE_0001_D1CE

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: str
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    folder = resources.files("safelight.db") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(match.group(1), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a version: {versions}")
    return found


async def migrate(conn: psycopg.AsyncConnection[Any]) -> list[str]:  # pragma: no mutate block
    """Apply every migration not yet applied; return the names applied now.

    ``conn`` must be in autocommit mode: the lock is a session lock, and each
    migration gets its own transaction.
    """
    if not conn.autocommit:
        raise ValueError("migrate() needs a connection in autocommit mode")
    applied_now: list[str] = []
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version text PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT version FROM schema_migrations")
        done = {row[0] for row in await cur.fetchall()}
        for migration in available_migrations():
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql.encode())
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
            applied_now.append(migration.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied_now
