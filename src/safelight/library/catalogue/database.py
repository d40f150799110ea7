"""The database's own identity: which PostgreSQL cluster and database this is, which the
proxy root's marker records (``proxystore.proxyroot``). Its one query is a named block
of ``database.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from safelight.core.sql import load_queries

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "database.sql")


@dataclass(frozen=True, slots=True)
class DatabaseIdentity:
    system_identifier: str
    """``pg_control_system().system_identifier``: one per cluster, made by initdb."""
    database: str

    def describe(self) -> str:
        return f"database {self.database!r} of the PostgreSQL cluster {self.system_identifier}"


async def database_identity(conn: psycopg.AsyncConnection[Any]) -> DatabaseIdentity:
    cur = await conn.execute(QUERIES["database_identity"])
    row = await cur.fetchone()
    assert row is not None
    return DatabaseIdentity(system_identifier=str(row[0]), database=str(row[1]))
