"""Sign-ins that expire: personal API tokens and the dashboard's sessions, deleted by
``token_cleanup``. Its queries are named blocks of ``signins.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg

from safelight.core.sql import load_queries

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "signins.sql")


async def delete_expired_tokens(conn: psycopg.AsyncConnection[Any], now: datetime) -> int:
    cur = await conn.execute(QUERIES["tokens_delete_expired"], {"now": now})
    return cur.rowcount


async def delete_expired_sessions(conn: psycopg.AsyncConnection[Any], now: datetime) -> int:
    """Delete the dashboard's sign-ins that expired: a session no longer signs anyone
    in after its expiry, and its row is kept no longer than the next clean-up."""
    cur = await conn.execute(QUERIES["sessions_delete_expired"], {"now": now})
    return cur.rowcount
