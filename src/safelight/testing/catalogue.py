"""A catalogue with rows in every table, and what each table holds, for the backup's
tests (ADR 0061): a restore must give back every row of every table."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from safelight.testing.handlers import Harness, jpeg, write
from safelight.work.model import Status

NOT_BACKED_UP = frozenset({"schema_migrations", "workers"})
"""The migrations' own table (a restore replays them) and the Workers' presence."""


async def fill_every_table(h: Harness, root: Path) -> None:
    """A crawled library (assets, proxies, a duplicate, a file that failed, the work and
    its attempts) and a row of each table a crawl does not write (users, tokens,
    sessions, a paused kind, a schedule, a burst and a similar group whose primary is an
    asset of it, a person with a face, a Worker's presence). Raises ``AssertionError`` if
    a table is left empty."""
    for number in range(3):
        write(root, f"2021/photo{number}.jpg", jpeg(number))
    write(root, "2021/copy.jpg", jpeg(0))
    write(root, "2021/broken.jpg", b"\xff\xd8\xff\xe0 not a whole JPEG")
    config_id = await h.add_config(root)
    assert (await h.run("crawl", config_id=config_id)).status is Status.SUCCEEDED
    now = h.clock.now()
    async with h.pool.connection() as conn:
        await conn.execute(
            "INSERT INTO users (name, is_admin, password_hash, created_at) "
            "VALUES ('alice', true, 'hash\twith a tab\nand a line', %(now)s)",
            {"now": now},
        )
        await conn.execute(
            "INSERT INTO auth_tokens (user_name, token_hash, created_at, expires_at) "
            "VALUES ('alice', 'digest', %(now)s, %(later)s)",
            {"now": now, "later": now + timedelta(days=30)},
        )
        await conn.execute(
            "INSERT INTO web_sessions (id_digest, user_id, origin, csrf_digest, created_at, "
            "last_seen_at, expires_at) SELECT '\\x00ff'::bytea, id, 'http://127.0.0.1:8470', "
            "'\\x01'::bytea, %(now)s, %(now)s, %(later)s FROM users",
            {"now": now, "later": now + timedelta(days=1)},
        )
        await conn.execute(
            "INSERT INTO paused_kinds (kind, paused_at, paused_by) VALUES ('crawl', %(now)s, "
            "'alice')",
            {"now": now},
        )
        await conn.execute(
            "INSERT INTO work_schedules (name, kind, next_run_at) VALUES "
            "('token_cleanup', 'token_cleanup', %(now)s)",
            {"now": now},
        )
        # assets -> bursts -> assets: a cycle of foreign keys a restore must load.
        await conn.execute(
            "WITH burst AS (INSERT INTO bursts (storage_config_id, burst_key, "
            "primary_asset_id, created_at) SELECT storage_config_id, 'b1', min(id), %(now)s "
            "FROM assets GROUP BY storage_config_id RETURNING id, primary_asset_id) "
            "UPDATE assets SET burst_id = burst.id FROM burst "
            "WHERE assets.id = burst.primary_asset_id",
            {"now": now},
        )
        # A similar group and a person with a face: assets -> similar_groups -> assets
        # is a cycle too, and a face names its person by (config, person).
        await conn.execute(
            "WITH grp AS (INSERT INTO similar_groups (storage_config_id, primary_asset_id, "
            "created_at) SELECT storage_config_id, max(id), %(now)s FROM assets "
            "GROUP BY storage_config_id RETURNING id, primary_asset_id) "
            "UPDATE assets SET similar_group_id = grp.id, picture_hash = -1 FROM grp "
            "WHERE assets.id = grp.primary_asset_id",
            {"now": now},
        )
        await conn.execute(
            "WITH person AS (INSERT INTO people (storage_config_id, name, named_by, named_at, "
            "created_at) SELECT storage_config_id, 'Grandma', 'alice', %(now)s, %(now)s "
            "FROM assets GROUP BY storage_config_id RETURNING id, storage_config_id) "
            "INSERT INTO faces (asset_id, storage_config_id, box_left, box_top, box_right, "
            "box_bottom, descriptor, person_id, placed_by, created_at) "
            "SELECT min(a.id), person.storage_config_id, 0.25, 0.25, 0.5, 0.5, "
            "decode(repeat('00', 512), 'hex'), person.id, 'person', %(now)s "
            "FROM person JOIN assets a USING (storage_config_id) "
            "GROUP BY person.id, person.storage_config_id",
            {"now": now},
        )
        await conn.execute(
            "INSERT INTO workers (worker_id, started_at, last_seen_at) "
            "VALUES ('w-gone', %(now)s, %(now)s)",
            {"now": now},
        )
        empty = [name for name, (rows, _) in (await table_digests(conn)).items() if rows == 0]
    assert not empty, f"tables left empty: {empty}"


async def tables_of(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    cur = await conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relkind IN ('r', 'p') ORDER BY relname"
    )
    return [name for (name,) in await cur.fetchall()]


async def table_digests(conn: psycopg.AsyncConnection[Any]) -> dict[str, tuple[int, str]]:
    """Each table's rows (but :data:`NOT_BACKED_UP`'s): how many, and an md5 of them all,
    each row as text, in order."""
    digests = {}
    for name in await tables_of(conn):
        if name in NOT_BACKED_UP:
            continue
        cur = await conn.execute(
            sql.SQL(
                "SELECT count(*), coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t::text)), '')"
                " FROM {} t"
            ).format(sql.Identifier(name))
        )
        row = await cur.fetchone()
        assert row is not None
        digests[name] = (int(row[0]), str(row[1]))
    return digests


def cut_short(path: Path, keep: float = 0.5) -> None:
    """The backup at ``path`` cut to the first ``keep`` of its bytes, as a full disk or a
    killed copy leaves it."""
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.truncate(int(size * keep))
        os.fsync(file.fileno())


def damaged(path: Path, target: Path) -> Path:
    """A copy of the backup at ``path`` with one byte in the middle of it changed, as a
    failing disk leaves it (inside a table's compressed rows, for any but a tiny one)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    return target
